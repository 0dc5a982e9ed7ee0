package scheduletest

import (
	"testing"
	"time"

	"github.com/s3q/s3q/shared/schedule"
)

// cronCase is a set of schedules ticked through a window, with the fire
// times each must make, written out by hand. The step is short enough that
// every fire time is taken up before the next one comes (so skip never
// drops one).
type cronCase struct {
	name     string
	from, to time.Time
	step     time.Duration
	want     map[string][]string // schedule id -> UTC fire times
	reqs     []schedule.Request
}

func runCron(t *testing.T, f Factory) {
	cases := []cronCase{
		{
			name: "weekdays_at_nine_fire_monday_to_friday_only",
			// Thursday 2026-04-30 to Thursday 2026-05-07, ticking hourly at :00:20.
			from: utc("2026-04-30T00:00:20Z"), to: utc("2026-05-07T00:00:20Z"), step: time.Hour,
			reqs: []schedule.Request{{ID: "weekdays", Cron: "0 9 * * 1-5"}},
			want: map[string][]string{"weekdays": {"2026-04-30T09:00:00Z", "2026-05-01T09:00:00Z",
				"2026-05-04T09:00:00Z", "2026-05-05T09:00:00Z", "2026-05-06T09:00:00Z"}},
		},
		{
			name: "every_fifteen_minutes_and_every_90_seconds",
			from: utc("2026-05-01T09:00:20Z"), to: utc("2026-05-01T09:31:20Z"), step: time.Minute,
			reqs: []schedule.Request{{ID: "q", Cron: "*/15 * * * *"}, {ID: "e90", Cron: "@every 90s"}},
			want: map[string][]string{
				"q": {"2026-05-01T09:15:00Z", "2026-05-01T09:30:00Z"},
				"e90": {"2026-05-01T09:01:30Z", "2026-05-01T09:03:00Z", "2026-05-01T09:04:30Z", "2026-05-01T09:06:00Z",
					"2026-05-01T09:07:30Z", "2026-05-01T09:09:00Z", "2026-05-01T09:10:30Z", "2026-05-01T09:12:00Z",
					"2026-05-01T09:13:30Z", "2026-05-01T09:15:00Z", "2026-05-01T09:16:30Z", "2026-05-01T09:18:00Z",
					"2026-05-01T09:19:30Z", "2026-05-01T09:21:00Z", "2026-05-01T09:22:30Z", "2026-05-01T09:24:00Z",
					"2026-05-01T09:25:30Z", "2026-05-01T09:27:00Z", "2026-05-01T09:28:30Z", "2026-05-01T09:30:00Z"},
			},
		},
		{
			name: "first_of_the_month_at_midnight",
			from: utc("2026-01-15T00:00:10Z"), to: utc("2026-04-15T00:00:10Z"), step: 24 * time.Hour,
			reqs: []schedule.Request{{ID: "monthly", Cron: "0 0 1 * *"}, {ID: "monthly-ny", Cron: "@monthly", Timezone: "America/New_York"}},
			want: map[string][]string{
				"monthly": {"2026-02-01T00:00:00Z", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"},
				// Local midnight: EST (UTC-5) until 03-08, then EDT (UTC-4).
				"monthly-ny": {"2026-02-01T05:00:00Z", "2026-03-01T05:00:00Z", "2026-04-01T04:00:00Z"},
			},
		},
		{
			// 2026-03-29 02:00 CET -> 03:00 CEST.
			name: "europe_berlin_spring_forward_skips_the_missing_hour",
			from: utc("2026-03-28T23:00:20Z"), to: utc("2026-03-29T03:00:20Z"), step: 5 * time.Minute,
			reqs: []schedule.Request{
				{ID: "at0230", Cron: "30 2 * * *", Timezone: "Europe/Berlin"},
				{ID: "at0300", Cron: "0 3 * * *", Timezone: "Europe/Berlin"},
				{ID: "hourly", Cron: "0 * * * *", Timezone: "Europe/Berlin"},
			},
			want: map[string][]string{
				"at0230": nil,
				"at0300": {"2026-03-29T01:00:00Z"},
				"hourly": {"2026-03-29T00:00:00Z", "2026-03-29T01:00:00Z", "2026-03-29T02:00:00Z", "2026-03-29T03:00:00Z"},
			},
		},
		{
			// 2026-10-25 03:00 CEST -> 02:00 CET.
			name: "europe_berlin_fall_back_fires_a_repeated_time_once",
			from: utc("2026-10-24T23:00:20Z"), to: utc("2026-10-25T02:40:20Z"), step: 5 * time.Minute,
			reqs: []schedule.Request{
				{ID: "at0230", Cron: "30 2 * * *", Timezone: "Europe/Berlin"},
				{ID: "half-hourly", Cron: "*/30 * * * *", Timezone: "Europe/Berlin"},
			},
			want: map[string][]string{
				"at0230": {"2026-10-25T00:30:00Z"},
				"half-hourly": {"2026-10-24T23:30:00Z", "2026-10-25T00:00:00Z", "2026-10-25T00:30:00Z", "2026-10-25T01:00:00Z",
					"2026-10-25T01:30:00Z", "2026-10-25T02:00:00Z", "2026-10-25T02:30:00Z"},
			},
		},
		{
			// 2026-03-08 02:00 EST -> 03:00 EDT.
			name: "america_new_york_spring_forward_skips_the_missing_hour",
			from: utc("2026-03-08T05:00:20Z"), to: utc("2026-03-08T08:00:20Z"), step: 5 * time.Minute,
			reqs: []schedule.Request{
				{ID: "at0230", Cron: "30 2 * * *", Timezone: "America/New_York"},
				{ID: "half-hourly", Cron: "*/30 * * * *", Timezone: "America/New_York"},
			},
			want: map[string][]string{
				"at0230": nil,
				// 00:30, 01:00, 01:30 EST, then 03:00, 03:30, 04:00 EDT.
				"half-hourly": {"2026-03-08T05:30:00Z", "2026-03-08T06:00:00Z", "2026-03-08T06:30:00Z",
					"2026-03-08T07:00:00Z", "2026-03-08T07:30:00Z", "2026-03-08T08:00:00Z"},
			},
		},
		{
			// 2026-11-01 02:00 EDT -> 01:00 EST.
			name: "america_new_york_fall_back_fires_a_repeated_time_once",
			from: utc("2026-11-01T04:00:20Z"), to: utc("2026-11-01T07:00:20Z"), step: 5 * time.Minute,
			reqs: []schedule.Request{
				{ID: "at0130", Cron: "30 1 * * *", Timezone: "America/New_York"},
				{ID: "hourly", Cron: "@hourly", Timezone: "America/New_York"},
			},
			want: map[string][]string{
				"at0130": {"2026-11-01T05:30:00Z"},
				// 01:00 EDT, 01:00 EST, 02:00 EST.
				"hourly": {"2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z", "2026-11-01T07:00:00Z"},
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // each in its own store
			e := newEnv(t, f)
			for _, r := range c.reqs {
				e.create(r, c.from)
			}
			e.tickEvery(c.from, c.to, c.step)
			for id, want := range c.want {
				var got []string
				for _, fi := range e.history(id) {
					got = append(got, fi.FireTime.Format(time.RFC3339))
					if fi.TaskID != e.fireID(id, fi.FireTime) || fi.Missed != 0 {
						t.Fatalf("%s: fire %+v", id, fi)
					}
				}
				wantStrings(t, id, got, want)
			}
			var want []string
			for id, ts := range c.want {
				for _, s := range ts {
					want = append(want, e.fireID(id, utc(s)))
				}
			}
			wantStrings(t, "tasks", e.taskIDs(), sortedCopy(want))
		})
	}
}
