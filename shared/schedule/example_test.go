package schedule_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store/memstore"
)

// A weekday report at 09:00 Berlin time, fired by a tick a minute. On AWS
// the store is s3store.New(client, bucket, "") and the tick is the
// schedule-tick Lambda, invoked by EventBridge every minute.
func ExampleScheduler_Tick() {
	ctx := context.Background()
	st := memstore.New()
	sc := schedule.New(st, queues.NewQueue(st, queues.Options{}), schedule.Options{})
	now := time.Date(2026, 5, 1, 6, 0, 0, 0, time.UTC) // a Friday

	s, err := sc.Create(ctx, schedule.Request{
		ID: "daily-report", TaskType: "report.make", Input: json.RawMessage(`{"kind":"daily"}`),
		Cron: "0 9 * * 1-5", Timezone: "Europe/Berlin",
	}, now)
	if err != nil {
		panic(err)
	}
	fmt.Println("next runs:", s.NextRuns[0].Format(time.RFC3339), s.NextRuns[1].Format(time.RFC3339))

	// The minute ticks until 07:01 UTC (09:01 in Berlin).
	for i := 1; i <= 61; i++ {
		rep, err := sc.Tick(ctx, now.Add(time.Duration(i)*time.Minute))
		if err != nil {
			panic(err)
		}
		if rep.Fired > 0 {
			fmt.Println("fired at", now.Add(time.Duration(i)*time.Minute).Format("15:04"), "UTC")
		}
	}
	h, _ := sc.History(ctx, "daily-report", schedule.HistoryRequest{})
	task, _ := sc.Queue().Get(ctx, h.Fires[0].TaskID)
	fmt.Println(task.TaskType, task.Status, string(task.Input), task.Queue)
	// Output:
	// next runs: 2026-05-01T07:00:00Z 2026-05-04T07:00:00Z
	// fired at 07:00 UTC
	// report.make pending {"kind":"daily"} default
}
