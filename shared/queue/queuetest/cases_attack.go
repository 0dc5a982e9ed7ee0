package queuetest

import "testing"

// The attack cases (cases_attack_*.go): a hostile or careless caller and
// a crashing, racing deployment against the side records, the declared
// queues and the listing. Each case failed on a defect, or guards one.
func runAttack(t *testing.T, f Factory) {
	t.Run("fault", func(t *testing.T) { runAttackFault(t, f) })
	t.Run("race", func(t *testing.T) { runAttackRace(t, f) })
	t.Run("scan", func(t *testing.T) { runAttackScan(t, f) })
	t.Run("queues", func(t *testing.T) { runAttackQueues(t, f); runAttackTargets(t, f); runAttackCachedLookups(t, f) })
	t.Run("child", func(t *testing.T) { runAttackChild(t, f); runAttackBackgroundChild(t, f) })
}
