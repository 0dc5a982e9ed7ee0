package client_test

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// The client is a client like the others: it decodes into the wire
// types (shared/wire) and depends on nothing of the server. A program
// that imports it never links the store, the queue core, the queue
// declarations or the scheduler.
func TestTheClientDependsOnTheWireAlone(t *testing.T) {
	out, err := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	var ours []string
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/s3q/s3q/") {
			ours = append(ours, p)
		}
	}
	want := []string{"github.com/s3q/s3q/shared/wire", "github.com/s3q/s3q/shared/client"}
	if strings.Join(ours, " ") != strings.Join(want, " ") {
		t.Fatalf("go list -deps ./shared/client holds %v of this module, want %v (never store, queue, queues or schedule)", ours, want)
	}
}
