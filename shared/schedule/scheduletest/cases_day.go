package scheduletest

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/internal/check"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/storefault"
)

// daySchedule is one schedule of the day, with what the model needs.
type daySchedule struct {
	req      schedule.Request
	pauseAt  int // step after whose ticks it is paused (-1: never)
	resumeAt int // step after whose ticks it is resumed (-1: never)
}

// daySchedules is the mix of the racing-ticks day: 200 schedules. The full
// mix makes about two thousand fires in 24 hours; the light one (for the
// real servers, where eight racing ticks cost some 60 requests a fire)
// keeps the frequent schedules out and makes about 150 in 6 hours.
func daySchedules(light bool) []daySchedule {
	r := rand.New(rand.NewPCG(1, 2)) // a fixed mix
	zones := []string{"UTC", "Europe/Berlin", "America/New_York", "Asia/Tokyo", "Australia/Sydney", "America/Los_Angeles", "Asia/Kolkata"}
	var out []daySchedule
	add := func(n int, cron string, edit func(r *schedule.Request)) {
		for range n {
			c := cron
			if c == "daily" {
				c = fmt.Sprintf("%d %d * * *", r.IntN(60), r.IntN(24))
			}
			req := schedule.Request{ID: fmt.Sprintf("s%03d", len(out)), TaskType: "day.job", Cron: c, Timezone: zones[len(out)%len(zones)]}
			if edit != nil {
				edit(&req)
			}
			out = append(out, daySchedule{req: req, pauseAt: -1, resumeAt: -1})
		}
	}
	heavy := func(n int) int {
		if light {
			return 0
		}
		return n
	}
	catchUp := func(w string) func(q *schedule.Request) {
		return func(q *schedule.Request) { q.MissedRuns, q.CatchUpWindow = schedule.MissedCatchUp, check.Dur(w) }
	}
	add(heavy(1), "@every 90s", nil)
	add(1+heavy(1), "*/15 * * * *", nil)
	add(3+heavy(7), "@hourly", nil)
	add(4, "0 */6 * * *", nil)
	add(30, "0 9 * * 1-5", nil)
	add(30, "0 0 1 * *", nil)
	add(3+heavy(7), "0 * * * *", catchUp("2h"))
	add(2+heavy(3), "*/30 * * * *", catchUp("45m"))
	add(2, "*/30 * * * *", func(q *schedule.Request) { q.Overlap = schedule.OverlapSkip })
	for i := range 20 {
		add(1, []string{"* * * * *", "@hourly", "*/15 * * * *", "@every 90s"}[i%4], func(q *schedule.Request) { q.Enabled = ptr(false) })
	}
	for range 5 {
		add(1, "@hourly", nil)
		out[len(out)-1].pauseAt, out[len(out)-1].resumeAt = -2, -2 // set by the day's length
	}
	add(200-len(out), "daily", nil)
	return out
}

// modelFires returns the fire times the documented behaviour gives for s
// when ticks run at ticks (sorted) and the schedule was created at created.
func modelFires(t testing.TB, s daySchedule, created time.Time, ticks []time.Time, steps []time.Time) []time.Time {
	sp, err := schedule.ParseSpec(s.req.Cron, s.req.Timezone)
	if err != nil {
		t.Fatal(err)
	}
	enabled := s.req.Enabled == nil || *s.req.Enabled
	var next time.Time
	if enabled {
		next = sp.Next(created)
	}
	var fired []time.Time
	ti := 0
	for si, step := range steps {
		// The ticks of this step, if it is not in the outage.
		if ti < len(ticks) && ticks[ti].Equal(step) {
			ti++
			if enabled && !next.IsZero() && !next.After(step) {
				var due []time.Time
				for d := next; !d.IsZero() && !d.After(step); d = sp.Next(d) {
					due = append(due, d)
				}
				var fire []time.Time
				if s.req.MissedRuns == schedule.MissedCatchUp {
					window := s.req.CatchUpWindow.Std()
					for _, d := range due {
						if !d.Before(step.Add(-window)) {
							fire = append(fire, d)
						}
					}
				}
				if len(fire) == 0 {
					fire = due[len(due)-1:]
				}
				if s.req.Overlap == schedule.OverlapSkip {
					// Nobody works the tasks: only the first fire ever happens.
					if len(fired) > 0 {
						fire = nil
					} else {
						fire = fire[:1]
					}
				}
				fired = append(fired, fire...)
				next = sp.Next(due[len(due)-1])
			}
		}
		if si == s.pauseAt {
			enabled = false
		}
		if si == s.resumeAt {
			enabled, next = true, sp.Next(step)
		}
	}
	return fired
}

func runDay(t *testing.T, f Factory) {
	t.Run("eight_racing_ticks_that_crash_fire_every_cron_time_of_a_day_exactly_once", func(t *testing.T) {
		hours := f.DayHours
		if hours <= 0 {
			hours = 24
		}
		e := newEnv(t, f)
		created := utc("2026-04-30T12:00:00Z")
		first := created.Add(30 * time.Second)
		nSteps := hours * 60
		var steps []time.Time
		for i := range nSteps {
			steps = append(steps, first.Add(time.Duration(i+1)*time.Minute))
		}
		// An outage: no tick runs for 90 minutes from 40% of the day on.
		outFrom := nSteps * 4 / 10
		outTo := outFrom + 90
		var ticks []time.Time
		for i, s := range steps {
			if i < outFrom || i >= outTo {
				ticks = append(ticks, s)
			}
		}
		scheds := daySchedules(true)
		for i := range scheds {
			if scheds[i].pauseAt == -2 {
				scheds[i].pauseAt, scheds[i].resumeAt = nSteps/4, nSteps*6/10
			}
		}
		// Create them all (a few at a time).
		var wg sync.WaitGroup
		sem := make(chan struct{}, 8)
		for _, s := range scheds {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if _, err := e.sc.Create(ctx, s.req, created); err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}

		// Eight tick processes; the first four crash now and then.
		const nTicks, crashy = 8, 4
		seed := uint64(time.Now().UnixNano())
		t.Logf("crash seed %d", seed)
		r := rand.New(rand.NewPCG(seed, 7))
		faulty := make([]*storefault.Store, nTicks)
		procs := make([]*schedule.Scheduler, nTicks)
		counting := store.NewCounting(e.s)
		for i := range procs {
			faulty[i] = storefault.New(counting)
			procs[i] = e.process(faulty[i])
		}
		crashes := 0
		ti := 0
		for si, step := range steps {
			if ti < len(ticks) && ticks[ti].Equal(step) {
				ti++
				for i := range crashy {
					if r.Float64() < 0.15 {
						faulty[i].Fail(1+r.IntN(20), []storefault.FaultMode{storefault.FailBefore, storefault.FailAfter}[r.IntN(2)])
					}
				}
				errs := make([]error, nTicks)
				for i := range nTicks {
					wg.Add(1)
					go func() {
						defer wg.Done()
						_, errs[i] = procs[i].Tick(ctx, step)
					}()
				}
				wg.Wait()
				for i := range nTicks {
					if faulty[i].Fired() {
						crashes++
					} else if errs[i] != nil {
						t.Fatalf("tick %d at %s (no crash): %v", i, step.Format(time.RFC3339), errs[i])
					}
					faulty[i].Disarm()
				}
			}
			for _, s := range scheds {
				if si == s.pauseAt {
					if _, err := e.sc.Pause(ctx, s.req.ID, step); err != nil {
						t.Fatal(err)
					}
				}
				if si == s.resumeAt {
					if _, err := e.sc.Resume(ctx, s.req.ID, step); err != nil {
						t.Fatal(err)
					}
				}
			}
		}

		// Every cron time of every enabled schedule made exactly one task,
		// and the queue holds exactly those.
		var want []string
		perKind := map[string]int{}
		for _, s := range scheds {
			fires := modelFires(t, s, created, ticks, steps)
			want = append(want, e.taskIDsFor(s.req.ID, fires...)...)
			kind := s.req.Cron
			if reDaily.MatchString(kind) {
				kind = "daily"
			}
			switch {
			case s.req.Enabled != nil:
				kind = "paused"
			case s.req.MissedRuns == schedule.MissedCatchUp:
				kind = "catch_up " + kind
			case s.req.Overlap == schedule.OverlapSkip:
				kind = "overlap=skip " + kind
			case s.pauseAt >= 0:
				kind = "paused mid-day " + kind
			}
			perKind[kind] += len(fires)
		}
		sort.Strings(want)
		got := e.taskIDs()
		if len(got) != len(want) {
			gotSet := map[string]bool{}
			for _, id := range got {
				gotSet[id] = true
			}
			wantSet := map[string]bool{}
			for _, id := range want {
				wantSet[id] = true
			}
			var missing, extra []string
			for _, id := range want {
				if !gotSet[id] {
					missing = append(missing, id)
				}
			}
			for _, id := range got {
				if !wantSet[id] {
					extra = append(extra, id)
				}
			}
			t.Fatalf("%d tasks, want %d; missing %v; extra %v", len(got), len(want), clipList(missing), clipList(extra))
		}
		wantStrings(t, "tasks", got, want)
		if perKind["paused"] != 0 || perKind["catch_up 0 * * * *"] == 0 {
			t.Fatalf("fires by kind: %v", perKind)
		}
		// In the store itself: a paused schedule has no fire history.
		for _, sc := range scheds {
			if sc.req.Enabled != nil {
				if h := e.keys(schedule.HistoryPrefix(sc.req.ID)); len(h) != 0 {
					t.Fatalf("paused schedule %s has fired: %v", sc.req.ID, clipList(h))
				}
			}
		}
		// Every enabled schedule's state names a marker that exists.
		due := map[string]bool{}
		for _, k := range e.keys("due/") {
			due[k] = true
		}
		for _, s := range scheds {
			st := e.state(s.req.ID)
			enabled := s.req.Enabled == nil
			if enabled != (st.DueKey != "") || (st.DueKey != "" && !due[st.DueKey]) {
				t.Fatalf("schedule %s: state %+v, marker present %v", s.req.ID, st, due[st.DueKey])
			}
		}
		t.Logf("%d steps, %d with ticks, %d schedules, %d fires, %d tick crashes; tick requests %s; fires by kind %v", nSteps, len(ticks), len(scheds), len(want), crashes, counting.Counts(), perKind)
	})
}

func clipList(s []string) []string {
	if len(s) > 5 {
		return append(s[:5:5], fmt.Sprintf("... %d more", len(s)-5))
	}
	return s
}

var reDaily = regexp.MustCompile(`^[0-9]+ [0-9]+ \* \* \*$`)
