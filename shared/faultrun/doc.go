// Package faultrun is test support: it runs the queue through
// faultproxy, the S3 proxy that injects faults, and checks what callers
// saw and what the bucket holds. Its tests lose the answer of each
// conditional write of each operation of the core (TestLostAnswers).
package faultrun
