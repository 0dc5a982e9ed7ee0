package queuetest

// Where the cases are: one file per behaviour, named cases_<behaviour>.go,
// so that a reader looking for "dedup" or "crash" finds every case of it
// in one place.
//
//	cases_submit.go       submit: defaults, deadlines, schedule_at and delay, batches, bad input, lost answers
//	cases_submit_id.go    submit with the client's id: replays, conflicts, lost answers, races, its cost
//	cases_dedup.go        dedup keys: the pointer, takeovers, races, and retries and purges of a holder
//	cases_claim.go        claim: order, task types, lapsed leases, cached records, racing claimers
//	cases_index.go        the claim index: markers, scans and their cost, shards
//	cases_lease.go        heartbeat, complete, fail and reschedule: replays, lost answers, backoff
//	cases_cancel.go       cancel and its acknowledgement
//	cases_retry.go        retry of a failed or cancelled task
//	cases_expiry.go       deadlines: expire by hand, reads past a deadline, waits that meet one
//	cases_sweep.go        the sweep: expiry, parked leases, wake-ups, its cost and its own deadline
//	cases_events.go       events owed and published: dead letters, the outbox, expiry events
//	cases_crash.go        a crash before and after every write of each operation, and the recovery
//	cases_list.go         listings, the status index, history
//	cases_bulk.go         purge and the bulk operations
//	cases_queues.go       declared queues: declarations, defaults, views, pause, stats, push targets
//	cases_concurrency.go  max_concurrency and its slots
//	cases_priority.go     priorities
//	cases_ratelimit.go    rate limits
//	cases_ratelimit_attack.go  rate limits under attack: lost answers, a damaged, hand-edited or deleted rate.json, batches, isolation
//	cases_trace.go        trace context
//	cases_waits.go        waits, and the arrivals that wake them
//	cases_children.go     parents and their children
//	cases_artifacts.go    artifacts
//
// A case's subtest name has not changed with its file: it is still under
// the group of Run it was first published in (TestConformanceMem/lost_answer/…,
// …/attack/race/…), which says how the case came to be. groups.go holds
// the functions Run's groups call, and each calls the cases of one
// behaviour by name (runCancel calls runCancelRetryCases, in cases_retry.go).
// Run a case on every store by its sentence:
//
//	go test ./shared/queue/queuetest/ -run 'TestConformance/.*/dedup_key_returns'
//
// Helpers used by the cases of one behaviour are in its file; those several
// share are in helpers.go, side_helpers.go and sweep_helpers.go.
