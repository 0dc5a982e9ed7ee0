// Package cdkquiet tests scripts/cdk-quiet, which `make synth`, `diff`,
// `deploy` and `destroy` run the CDK CLI through.
package cdkquiet

import (
	"bytes"
	"errors"
	"os/exec"
	"testing"
)

// run runs script through scripts/cdk-quiet and returns its stderr and
// exit status.
func run(t *testing.T, script string) (string, int) {
	t.Helper()
	cmd := exec.Command("bash", "../cdk-quiet", "bash", "-c", script)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return errOut.String(), 0
	case errors.As(err, &ee):
		return errOut.String(), ee.ExitCode()
	}
	t.Fatal(err)
	return "", 0
}

// jsii-runtime-go's benign double wait is taken out; a real failure keeps
// its message and its status, so make fails on it.
func TestCDKQuietDropsOnlyTheBenignJSIILineAndKeepsTheStatus(t *testing.T) {
	const benign = "Runtime process exited abnormally: waitid: no child processes"
	if errOut, code := run(t, `echo "Successfully synthesized" >&2; printf '`+benign+`' >&2; exit 0`); code != 0 || errOut != "Successfully synthesized\n" {
		t.Errorf("a synth with the benign line: exit %d, stderr %q", code, errOut)
	}
	if errOut, code := run(t, `echo "Runtime process exited abnormally: signal: killed" >&2; exit 1`); code != 1 || errOut != "Runtime process exited abnormally: signal: killed\n" {
		t.Errorf("a real failure: exit %d, stderr %q", code, errOut)
	}
	if _, code := run(t, `printf '`+benign+`' >&2; exit 3`); code != 3 {
		t.Errorf("a failed synth exits %d, want its own 3", code)
	}
}
