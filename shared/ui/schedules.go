package ui

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/schedule"
)

// scheduleRow is one schedule as the pages show it.
type scheduleRow struct {
	schedule.Schedule
	Words string // the cron in words, "" when it cannot be said
}

// schedulesView is the schedules page: one page of a queue's schedules.
type schedulesView struct {
	Queue string
	// Queues, on /schedules without a queue, are the declared queues to
	// choose from (one page of GET /queues?counts=false), and Queue is "".
	Queues     []string
	Schedules  []scheduleRow
	Cursor     string
	NextCursor string
	Back       string
	Err        *pageErr
}

// schedulesPage is /schedules?queue=: one page of
// GET /queues/{queue}/schedules (two GETs per schedule).
func (c *Console) schedulesPage(r *http.Request) (*view, error) {
	q := r.URL.Query()
	v := schedulesView{Queue: q.Get("queue"), Cursor: q.Get("cursor"), Back: r.URL.RequestURI()}
	if v.Queue == "" {
		// No queue named: the queues to choose from, never one picked
		// for the user (queue default may have no schedule where
		// another has).
		qs, next, err := c.listQueues(r.Context(), v.Cursor, false, 100)
		if err != nil && !unsupported(err) {
			return nil, err
		}
		for _, qu := range qs {
			v.Queues = append(v.Queues, qu.Name)
		}
		if err != nil { // an API without GET /queues: its one queue
			v.Queues = []string{queue.DefaultQueue}
		}
		v.NextCursor = next
		return &view{template: "schedules", title: "Schedules", nav: "schedules", data: v, refresh: true}, nil
	}
	res, err := c.api.ListSchedules(r.Context(), client.ListSchedulesRequest{Queue: v.Queue, Limit: c.opts.PageSize, Cursor: v.Cursor})
	if err != nil {
		pe := toPageErr(err)
		if pe.Status != http.StatusBadRequest {
			return nil, err
		}
		v.Err = pe
	}
	for _, s := range res.Schedules {
		v.Schedules = append(v.Schedules, scheduleRow{Schedule: s, Words: cronWords(s.Cron)})
	}
	v.NextCursor = res.NextCursor
	status := http.StatusOK
	if v.Err != nil {
		status = v.Err.Status
	}
	return &view{template: "schedules", title: "Schedules of " + v.Queue, nav: "schedules", data: v, refresh: v.Err == nil, status: status}, nil
}

// recentFires is the most fires the schedule page shows.
const recentFires = 10

// scheduleView is a schedule's page.
type scheduleView struct {
	scheduleRow
	Input      *jsonBlock
	Fires      []schedule.Fire // newest first
	FiresErr   *pageErr
	FiresSince time.Time
	Back       string
}

// schedulePage is /queues/{queue}/schedules/{id}: GET of the schedule
// (with its next fires) and one page of its history, the fires of the
// last recentFires periods.
func (c *Console) schedulePage(r *http.Request) (*view, error) {
	api := c.api.In(r.PathValue("queue"))
	id := r.PathValue("id")
	s, err := api.GetSchedule(r.Context(), id)
	if err != nil {
		return nil, err
	}
	now := c.opts.Now()
	v := scheduleView{scheduleRow: scheduleRow{Schedule: s, Words: cronWords(s.Cron)}, Input: prettyJSON(s.Input), Back: r.URL.RequestURI()}
	// The history is oldest first: start it recentFires periods back.
	since := now.Add(-time.Duration(recentFires) * period(s))
	if s.LastRunAt != nil && s.LastRunAt.Before(now) {
		since = s.LastRunAt.Add(-time.Duration(recentFires-1) * period(s))
	}
	v.FiresSince = since
	h, err := api.ScheduleHistory(r.Context(), id, client.ScheduleHistoryRequest{Since: &since, Limit: 2 * recentFires})
	if err != nil {
		v.FiresErr = toPageErr(err)
	} else {
		fires := h.Fires
		slices.Reverse(fires)
		v.Fires = fires[:min(len(fires), recentFires)]
	}
	return &view{template: "schedule", title: "Schedule " + s.ID, nav: "schedules", data: v, refresh: true}, nil
}

// period is the time between two fires of a schedule (at least a
// minute), from its expression.
func period(s schedule.Schedule) time.Duration {
	sp, err := schedule.ParseSpec(s.Cron, s.Timezone)
	if err != nil {
		return time.Hour
	}
	from := time.Now()
	if s.LastRunAt != nil {
		from = *s.LastRunAt
	}
	n := sp.NextN(from, 2)
	if len(n) < 2 {
		return time.Hour
	}
	return max(n[1].Sub(n[0]), time.Minute)
}

// toggle is POST /queues/{queue}/pause|resume and
// POST /queues/{queue}/schedules/{id}/pause|resume: it checks the CSRF
// token, pauses or resumes the queue or the schedule, and goes back.
func (c *Console) toggle(w http.ResponseWriter, r *http.Request) {
	op := r.PathValue("op")
	if op != "pause" && op != "resume" {
		c.servePage(w, r, func(*http.Request) (*view, error) {
			return nil, pageError(http.StatusNotFound, "not_found", "", "no action %q", op)
		})
		return
	}
	r.Body = http.MaxBytesReader(nil, r.Body, maxForm)
	ctx, cost := withCost(r.Context())
	r = r.WithContext(ctx)
	failed := c.checkCSRF(r)
	if failed == nil {
		api := c.api.In(r.PathValue("queue"))
		switch id := r.PathValue("id"); {
		case id == "":
			_, failed = api.Call(ctx, http.MethodPost, "/queues/"+url.PathEscape(r.PathValue("queue"))+"/"+op, nil, struct{}{}, nil)
		case op == "pause":
			_, failed = api.PauseSchedule(ctx, id)
		default:
			_, failed = api.ResumeSchedule(ctx, id)
		}
	}
	if failed != nil {
		c.servePage(w, r, func(*http.Request) (*view, error) { return nil, failed })
		return
	}
	// The page the redirect leads to says what this action cost too.
	http.SetCookie(w, &http.Cookie{Name: spentCookie, Value: strconv.FormatInt(cost.snapshot().S3, 10), Path: c.opts.Prefix + "/",
		MaxAge: 60, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, c.back(r.PostFormValue("back")), http.StatusSeeOther)
}
