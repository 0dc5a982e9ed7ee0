package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/schedule"
	"github.com/s3q/s3q/shared/store"
)

// benchTick prints what one schedule tick costs against the schedules it
// leaves alone, and what an idle deployment's tick costs a minute:
//
//	bench tick schedules=N due=5 requests=R list=L get=G put=P
//	bench idle tick lists_per_minute=L requests_per_minute=R
//
// One bucket holds N schedules (10, then 1,000, then 10,000) of which 5
// fire every minute; the others wait for times later in the day. One tick
// fires the 5; requests are the tick's own, counted by a store.Counting
// (get includes HEAD), and must not grow with N: the tick reads due/ from
// its start and stops at the first future key. The 5 are made with
// Scheduler.Create; the others are written through the store as copies of
// one made by Create (its definition, state and due marker under a new id),
// three PUTs each, many at a time. The tick's process is warm (its queue
// has registered itself, once per process, by a first tick).
//
// The idle figure is a tick a minute for 5 minutes over the 10,000
// schedules with none due.
func benchTick(ctx context.Context, srv *s3local.Server) error {
	s := srv.Store(prefix())
	setup := schedule.New(s, queues.NewQueue(s, queues.Options{}), schedule.Options{})
	created := time.Date(2026, 5, 1, 8, 59, 0, 0, time.UTC)
	for i := range 5 {
		if _, err := setup.Create(ctx, schedule.Request{ID: fmt.Sprintf("due-%d", i), TaskType: "bench", Cron: "* * * * *"}, created); err != nil {
			return err
		}
	}
	tmpl, err := setup.Create(ctx, schedule.Request{ID: "idle-00000", TaskType: "bench", Cron: "30 17 * * *", Input: json.RawMessage(`{"report":"daily"}`)}, created)
	if err != nil {
		return err
	}
	stored := 6
	counting := store.NewCounting(s)
	proc := schedule.New(counting, queues.NewQueue(counting, queues.Options{}), schedule.Options{})
	now := time.Date(2026, 5, 1, 9, 0, 30, 0, time.UTC)
	if _, err := proc.Tick(ctx, now); err != nil { // warm-up: fires the 5 once
		return err
	}
	for _, n := range []int{10, 1_000, 10_000} {
		fmt.Fprintf(os.Stderr, "bench: tick schedules=%d: writing %d schedules\n", n, n-stored)
		start := time.Now()
		if err := copySchedules(ctx, s, tmpl, stored, n); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "bench: wrote them in %s\n", time.Since(start).Round(time.Millisecond))
		stored = n
		now = now.Add(time.Minute)
		counting.Reset()
		rep, err := proc.Tick(ctx, now)
		if err != nil {
			return err
		}
		if rep.Fired != 5 {
			return fmt.Errorf("tick over %d schedules fired %d, want 5", n, rep.Fired)
		}
		c := counting.Counts()
		fmt.Printf("bench tick schedules=%d due=5 requests=%d list=%d get=%d put=%d\n", n, c.Total(), c.List, c.Get+c.Head, c.Put)
	}

	// Idle: pause the 5, then a tick a minute.
	for i := range 5 {
		if _, err := setup.Pause(ctx, fmt.Sprintf("due-%d", i), now); err != nil {
			return err
		}
	}
	const minutes = 5
	counting.Reset()
	for i := 1; i <= minutes; i++ {
		if _, err := proc.Tick(ctx, now.Add(time.Duration(i)*time.Minute)); err != nil {
			return err
		}
	}
	c := counting.Counts()
	fmt.Printf("bench idle tick lists_per_minute=%.1f requests_per_minute=%.1f\n", float64(c.List)/minutes, float64(c.Total())/minutes)
	return nil
}

// copySchedules writes schedules idle-{from}..idle-{to-1} as copies of
// tmpl (its definition, state and due marker under the new id).
func copySchedules(ctx context.Context, s store.Store, tmpl schedule.Schedule, from, to int) error {
	tmplDef, err := s.Get(ctx, schedule.DefinitionKey(tmpl.ID))
	if err != nil {
		return err
	}
	var stored schedule.Definition
	if err := json.Unmarshal(tmplDef.Body, &stored); err != nil {
		return err
	}
	tmplState, err := s.Get(ctx, schedule.StateKey(tmpl.ID))
	if err != nil {
		return err
	}
	var st schedule.State
	if err := json.Unmarshal(tmplState.Body, &st); err != nil {
		return err
	}
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	sem := make(chan struct{}, 32)
	for i := from; i < to; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			id := fmt.Sprintf("idle-%05d", i)
			def := stored
			def.ID = id
			ns := st
			ns.ScheduleID = id
			ns.DueKey = schedule.DueKey(*st.NextRunAt, id, st.Rev)
			defBody, _ := json.Marshal(&def)
			stBody, _ := json.Marshal(&ns)
			for _, w := range []struct {
				key  string
				body []byte
			}{{schedule.DefinitionKey(id), defBody}, {ns.DueKey, nil}, {schedule.StateKey(id), stBody}} {
				if _, err := s.Put(ctx, w.key, w.body); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}
