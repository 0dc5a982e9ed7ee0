package lambdafn_test

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/lambdafn/lambdafntest"
	"github.com/s3q/s3q/shared/s3local/s3localtest"
)

// The review's storm: one 60-task batch a second for 60 s into one push
// queue, schedule_at spread over the next minute. Wakes were keyed by
// queue and due second and each woken invocation slept until its second:
// 3,600 Invokes and about 1,800 invocations at once. Now a container
// sends at most one Invoke per queue and second, and one run per queue
// waits for future tasks (the runner lease): at most 60 Invokes, a
// handful of invocations at once, and every task delivered once, on time.
// The clock runs faster than real time; the Invoke count does not depend
// on the machine's speed. How many invocations run at once does (a slow
// machine makes each last longer): the emulated Lambda holds them to the
// stack's reserved concurrency (10) by throttling, as Lambda does, and the
// test asserts what must hold however many were throttled — every task
// delivered once — and prints the concurrency figures.
func TestADispatchStormIsBoundedInInvokesAndConcurrency(t *testing.T) {
	// Scale 5 (3 under the race detector, which makes every invocation
	// several times slower): on an idle machine an invocation ends well
	// within its second, so few overlap and none is throttled.
	scale := 5.0
	if raceOn {
		scale = 3
	}
	res, err := lambdafntest.DispatchStorm(t.Context(), lambdafntest.StormOptions{Scale: scale})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("bench dispatch storm batches=60 spread_s=60 invokes=%d peak_concurrent=%d throttled=%d delivered=%d duplicates=%d lateness_p50_ms=%d lateness_p99_ms=%d",
		res.Invokes, res.PeakConcurrent, res.Throttled, res.Delivered, res.Duplicates, res.LatenessP50.Milliseconds(), res.LatenessP99.Milliseconds())
	if res.Invokes > 60 {
		t.Errorf("%d Invokes of dispatch for one push queue in 60 s, want at most 60", res.Invokes)
	}
	if res.Delivered != res.Tasks || res.Duplicates != 0 {
		t.Errorf("%d of %d tasks delivered, %d twice", res.Delivered, res.Tasks, res.Duplicates)
	}
}

// The same pattern, smaller, on a real S3 gateway (versitygw): the
// runner lease's conditional writes and the claims on a server's
// semantics. Eight 20-task batches a second apart, spread over the next
// 8 s, in real time (a request to the gateway is slower than to the mem
// store): at most one Invoke a batch, a handful at once, every task once.
func TestADispatchStormOnVersityGWIsBounded(t *testing.T) {
	res, err := lambdafntest.DispatchStorm(t.Context(), lambdafntest.StormOptions{
		Store: s3localtest.NewStore(t, servers.VersityGW), Batches: 8, BatchSize: 20, Spread: 8 * time.Second, Scale: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storm on versitygw: invokes=%d peak_concurrent=%d throttled=%d delivered=%d duplicates=%d lateness_p99_ms=%d",
		res.Invokes, res.PeakConcurrent, res.Throttled, res.Delivered, res.Duplicates, res.LatenessP99.Milliseconds())
	if res.Invokes > 8 || res.Delivered != res.Tasks || res.Duplicates != 0 {
		t.Errorf("storm on versitygw: %+v", res)
	}
}

// Throttled to one dispatch invocation at a time (a reserved concurrency
// of 1), a smaller storm still delivers every task once: the wakes that
// wait for the one running invocation find the queue served when they
// run, and nothing is left to the minute rule.
func TestADispatchStormThrottledToOneInvocationDeliversEveryTaskOnce(t *testing.T) {
	res, err := lambdafntest.DispatchStorm(t.Context(), lambdafntest.StormOptions{
		Batches: 10, BatchSize: 20, Spread: 10 * time.Second, Scale: 5, Reserved: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("storm throttled to 1: invokes=%d peak_concurrent=%d throttled=%d delivered=%d duplicates=%d lateness_p99_ms=%d",
		res.Invokes, res.PeakConcurrent, res.Throttled, res.Delivered, res.Duplicates, res.LatenessP99.Milliseconds())
	if res.PeakConcurrent > 1 || res.Delivered != res.Tasks || res.Duplicates != 0 {
		t.Errorf("storm throttled to 1: %+v", res)
	}
}
