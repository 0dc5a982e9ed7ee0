package faultrun_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
)

// onEachServer runs each case, in a subtest named by name, on each S3
// server the lost-answer tests prove against.
func onEachServer[C any](t *testing.T, cases []C, name func(C) string, run func(*testing.T, *s3local.Server, C)) {
	for _, srv := range []*s3local.Server{servers.GoFakeS3, servers.VersityGW} {
		t.Run(srv.Name, func(t *testing.T) {
			for _, c := range cases {
				t.Run(name(c), func(t *testing.T) { run(t, srv, c) })
			}
		})
	}
}

// loseEachWrite runs a case once without faults, tracing the requests it
// makes, and then once per write of that trace, each in a subtest named
// after the write, on a fresh env with the answer of that write lost.
// fresh makes an env with the case's setup done and returns it with its
// proxy; ref runs the case without faults; try runs it under the fault and
// returns the checks of what it got, which run only once the fault is seen
// to have fired. norm maps a request pattern to the one counted and
// injected (ids that vary between runs replaced). A case that writes
// nothing fails: it would prove nothing.
func loseEachWrite[E any](t *testing.T, fresh func(*testing.T) (E, *faultproxy.Proxy), norm func(string) string,
	ref func(E), try func(*testing.T, E) (check func())) {
	t.Helper()
	e, p := fresh(t)
	p.StartTrace()
	ref(e)
	trace := p.StopTrace()
	t.Logf("requests without faults: %v", trace)
	if !slices.ContainsFunc(trace, faultproxy.Entry.IsWrite) {
		t.Fatal("the operation wrote nothing: no answer to lose")
	}
	seen := map[string]int{}
	for _, w := range trace {
		pattern := norm(w.Pattern())
		seen[pattern]++
		if !w.IsWrite() {
			continue
		}
		nth := seen[pattern]
		t.Run(fmt.Sprintf("%s_%s_%s_%d", strings.ToLower(w.Method), w.Cond, strings.ReplaceAll(w.Key, "/", "_"), nth), func(t *testing.T) {
			e, p := fresh(t)
			shot, err := p.Inject(faultproxy.LostAnswer, pattern, nth)
			if err != nil {
				t.Fatal(err)
			}
			check := try(t, e)
			if !shot.Fired() {
				t.Fatalf("no request %q number %d was made", pattern, nth)
			}
			p.Disarm()
			check()
		})
	}
}
