package queuetest

import "testing"

// The attack cases (each in the file of its behaviour: doc.go): a hostile or careless caller and
// a crashing, racing deployment against the side records, the declared
// queues and the listing. Each case failed on a defect, or guards one.
func runAttack(t *testing.T, f Factory) {
	t.Run("fault", func(t *testing.T) { runAttackFault(t, f) })
	t.Run("race", func(t *testing.T) { runAttackRace(t, f) })
	t.Run("scan", func(t *testing.T) { runAttackScan(t, f) })
	t.Run("queues", func(t *testing.T) { runAttackQueues(t, f); runAttackTargets(t, f); runAttackCachedLookups(t, f) })
	t.Run("child", func(t *testing.T) { runAttackChild(t, f); runAttackBackgroundChild(t, f) })
}

func runAttackRace(t *testing.T, f Factory) {
	runAttackRaceChildrenCases(t, f)
	runAttackRaceDedupCases(t, f)
	runAttackRaceConcurrencyCases(t, f)
	runAttackRaceSweepCases(t, f)
}

func runCancel(t *testing.T, f Factory) {
	runCancelCancelCases(t, f)
	runCancelRetryCases(t, f)
	runCancelDedupCases(t, f)
	runCancelExpiryCases(t, f)
}

// runCancelRules: a cancel request outlives a lapsed lease and wins over
// a retryable failure; a retry never makes two live tasks of one dedup
// key; the times a retry computes are whole microseconds.
func runCancelRules(t *testing.T, f Factory) {
	runCancelRulesCancelCases(t, f)
	runCancelRulesDedupCases(t, f)
	runCancelRulesLeaseCases(t, f)
}

// The round trips of the hot paths: a Queue's cached record versions let a
// lease operation after its own claim, and a claim of its own submit, be
// one conditional write; a wrong guess costs a read, never a wrong
// answer. Background cleanup moves a lease operation's marker delete off
// the caller's path.
func runFast(t *testing.T, f Factory) {
	runFastLeaseCases(t, f)
	runFastClaimCases(t, f)
	runFastIndexCases(t, f)
	runFastWaitsCases(t, f)
}

func runLost(t *testing.T, f Factory) {
	runLostSubmit(t, f)
	runLostLease(t, f)
	runLostManage(t, f)
	runIDBudget(t, f)
	runIDRace(t, f)
}

func runLostSubmit(t *testing.T, f Factory) {
	runLostSubmitSubmitCases(t, f)
	runLostSubmitSubmitIDCases(t, f)
}

func runLostManage(t *testing.T, f Factory) {
	runLostManageQueuesCases(t, f)
	runLostManageDedupCases(t, f)
	runLostManageCancelCases(t, f)
	runLostManageRetryCases(t, f)
	runLostManageExpiryCases(t, f)
}

// The queue operations: pause and resume, purge, bulk retry, cancel and
// expire, stats.

func runOps(t *testing.T, f Factory) {
	runOpsQueuesCases(t, f)
	runOpsBulkCases(t, f)

	runPurgeCrash(t, f)
}

func runRace(t *testing.T, f Factory) {
	runRaceClaimCases(t, f)
	runRaceLeaseCases(t, f)
	runRaceCrashCases(t, f)
	runRaceDedupCases(t, f)
}

func runReplay(t *testing.T, f Factory) {
	runReplayLeaseCases(t, f)
	runReplaySubmitIDCases(t, f)
	runReplaySubmitCases(t, f)
	runReplayArtifactsCases(t, f)
	runReplayQueuesCases(t, f)
}

// runRetryWait: a failure with RetryAfter, and the rule of a synchronous
// wait, on every store.
func runRetryWait(t *testing.T, f Factory) {
	runRetryWaitLeaseCases(t, f)
	runRetryWaitExpiryCases(t, f)
}

func runSubmit(t *testing.T, f Factory) {
	runSubmitSubmitCases(t, f)
	runSubmitChildrenCases(t, f)
	runSubmitDedupCases(t, f)
}

func runSweep(t *testing.T, f Factory) {
	runSweepSweepCases(t, f)
	runSweepChildrenCases(t, f)
	runSweepEventsCases(t, f)
	runSweepArtifactsCases(t, f)

	t.Run("rules", func(t *testing.T) { runSweepRules(t, f) })
	t.Run("crash", func(t *testing.T) { runSweepCrash(t, f); runSweepCrashPaths(t, f) })
}

// runSweepRules: the sweep and the transitions around it keep their
// promises — a dead-lettered task owes its event before it can be
// retried, each dead-lettering its own event; a parked lease, shortened
// or lapsed, is reclaimed when it lapses; a child of an expired parent
// stays ended; a sweep past its deadline lists nothing; racing sweeps and
// workers lose nothing.
func runSweepRules(t *testing.T, f Factory) {
	runSweepRulesEventsCases(t, f)
	runSweepRulesSweepCases(t, f)
	runSweepRulesChildrenCases(t, f)
}
