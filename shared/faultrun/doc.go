// Package faultrun is test support: it runs the queue through
// faultproxy, the S3 proxy that injects faults, and audits what callers
// saw and what the bucket holds.
//
// Run is the randomized run of make test (TestFaultRun, 10% mixed faults
// on versitygw) and of make bench (one line per fault mix): the dev
// server stack on the proxy's endpoint, the Go client submitting with
// ids, TTLs and repeating dedup keys, workers that crash mid-lease, then
// an audit of every record and its versions read straight from the
// server. Its tests also lose the answer of each conditional write of
// each operation of the core, one at a time (TestLostAnswers).
package faultrun
