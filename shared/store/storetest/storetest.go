// Package storetest is the conformance suite of store.Store: every rule in
// the interface's doc comments, as test cases that any implementation runs
// with
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, storetest.Factory{Name: "mem", New: func(testing.TB) store.Store { return memstore.New() }})
//	}
//
// Each case gets a fresh, empty store from the Factory (for a shared bucket,
// a store under a fresh key prefix) and the cases run in parallel. The
// suite expects a versioned store.
package storetest

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

// Factory makes the stores the suite runs against.
type Factory struct {
	// Name names the implementation in failures.
	Name string
	// New returns a fresh, empty store. It is called once per case, with
	// that case's t, and should register any cleanup with t.Cleanup.
	New func(t testing.TB) store.Store
	// Deviations lists, by case name, the cases the store is known to fail,
	// each with the reason. Such a case still runs, and must fail: Run
	// reports a case that passes, so that the entry is removed once the
	// store is fixed. Defaults to none.
	Deviations map[string]string
}

// testCase is one rule of the contract.
type testCase struct {
	name string
	run  func(t testing.TB, s store.Store)
}

// cases returns every case, in the order of the files that define them.
func cases() []testCase {
	var all []testCase
	for _, group := range [][]testCase{getCases, putCases, raceCases, deleteCases, listCases, versionCases} {
		all = append(all, group...)
	}
	return all
}

// Run runs every case against stores from f, each as a parallel subtest
// named after the rule it checks.
func Run(t *testing.T, f Factory) {
	all := cases()
	known := make(map[string]bool, len(all))
	for _, c := range all {
		known[c.name] = true
	}
	for name := range f.Deviations {
		if !known[name] {
			t.Errorf("%s: deviation %q names no case", f.Name, name)
		}
	}
	for _, c := range all {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := f.New(t)
			reason, deviates := f.Deviations[c.name]
			if !deviates {
				c.run(t, s)
				return
			}
			failures := runRecorded(t, func(t testing.TB) { c.run(t, s) })
			if len(failures) == 0 {
				t.Fatalf("%s passes, but is listed as a deviation (%s): remove the entry", f.Name, reason)
			}
			t.Logf("%s fails as known (%s):\n\t%s", f.Name, reason, strings.Join(failures, "\n\t"))
		})
	}
}

// runRecorded runs fn with a testing.TB that records its failures instead of
// failing t, and returns them.
func runRecorded(t testing.TB, fn func(testing.TB)) []string {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer func() {
			// A case that keeps going after a recorded error may index past
			// what it got; that is one more failure, not a crashed binary.
			if p := recover(); p != nil {
				r.fail(fmt.Sprintf("panicked: %v", p))
			}
		}()
		fn(r)
	}()
	<-done
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.failures
}

// recorder is a testing.TB whose failures are only recorded. Everything
// else (Context, Cleanup, Helper, Log, Name, TempDir) goes to the real test.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, msg)
}

func (r *recorder) Fail()                             { r.fail("failed") }
func (r *recorder) FailNow()                          { r.fail("failed"); runtime.Goexit() }
func (r *recorder) Failed() bool                      { r.mu.Lock(); defer r.mu.Unlock(); return len(r.failures) > 0 }
func (r *recorder) Error(args ...any)                 { r.fail(fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) { r.fail(fmt.Sprintf(format, args...)) }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
