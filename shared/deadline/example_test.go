package deadline_test

import (
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/deadline"
	"github.com/s3q/s3q/shared/queue"
)

// A handler with a task due at 09:10 that needs a minute to finish
// cleanly: it goes on at 09:08, stops from 09:09 (or at once when a cancel
// is requested), and the artifact URLs it hands out never outlive the
// deadline. worker.Task.ShouldAbort(time.Minute) is the same rule at the
// worker's clock.
func ExampleGuard() {
	created := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	due := created.Add(10 * time.Minute)
	t := &queue.Task{ID: queue.NewID(created), CreatedAt: created, ExpiresAt: &due}
	g := deadline.Guard{AbortMargin: time.Minute, ArtifactTTL: time.Hour}

	left, _ := deadline.Remaining(t, created.Add(4*time.Minute))
	fmt.Println("left at 09:04:", left)
	fmt.Println("abort at 09:08:", g.ShouldAbort(t, created.Add(8*time.Minute)))
	fmt.Println("abort at 09:09:", g.ShouldAbort(t, created.Add(9*time.Minute)))
	fmt.Println("URL from 09:05 expires:", g.URLExpiry(t, created.Add(5*time.Minute)).Format("15:04"))
	t.CancelRequested = true
	fmt.Println("abort at 09:00 once asked to cancel:", g.ShouldAbort(t, created))
	// Output:
	// left at 09:04: 6m0s
	// abort at 09:08: false
	// abort at 09:09: true
	// URL from 09:05 expires: 09:10
	// abort at 09:00 once asked to cancel: true
}
