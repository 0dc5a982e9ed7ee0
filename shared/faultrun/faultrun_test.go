package faultrun_test

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/faultrun"
)

// TestFaultRun runs the queue on versitygw behind the fault proxy at 10%
// of each fault mix (short and bounded: make test runs it) and fails on
// any lost task, duplicate, dedup violation, task run twice under a valid
// lease or 500.
func TestFaultRun(t *testing.T) {
	for _, mix := range []string{"mixed", "lost_answers"} {
		t.Run(mix, func(t *testing.T) {
			rep, err := faultrun.Run(t.Context(), faultrun.Config{
				Server: servers.VersityGW, Mix: mix, Rate: 0.10, Seed: 1,
				Submits: 150, Workers: 8, Budget: 40 * time.Second, Logf: t.Logf,
			})
			if err != nil {
				t.Fatal(err)
			}
			t.Log(rep.Line())
			t.Log(rep.Detail())
			if err := rep.Err(); err != nil {
				t.Error(err)
			}
			if rep.Faults.Total() == 0 || rep.Executions == 0 || rep.Crashes == 0 || rep.APILost == 0 {
				t.Errorf("the run did not exercise faults, work, crashes and lost API answers: %s", rep.Detail())
			}
		})
	}
}
