package queue

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// QueueCounts are the tasks of a queue as its indexes show them: the
// claim indexes for live tasks, the status/ index for failed, cancelled
// and expired ones. They are read from LISTs alone, no record, so a
// stale entry counts until a claim, a listing or the sweep removes it.
type QueueCounts struct {
	// Live is the tasks pending or running (a running task keeps its
	// marker), Delayed those of them not available before now.
	Live    int `json:"live"`
	Delayed int `json:"delayed"`
	// Running is the slots held, for a queue with max_concurrency: the
	// tasks running now, and any slot a crash left (taken over by the next
	// claim that needs it once its lease has lapsed).
	Running *int `json:"running,omitempty"`
	// Failed (dead-lettered), Cancelled and Expired are the tasks in
	// those statuses.
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Expired   int `json:"expired"`
	// Completed is the tasks finished otherwise (completed, archived):
	// the queue's records less the counts above. It needs the queue's
	// records under a prefix of their own (recordPrefixes) and is absent
	// in a layout that keeps every queue's records together.
	Completed *int `json:"completed,omitempty"`
	// AtLeast is true when a count stopped at MaxCountPages pages of a
	// prefix: there are at least this many.
	AtLeast bool `json:"at_least,omitempty"`
}

// MaxCountPages bounds the LIST pages a count reads per prefix (per
// claim index for the live tasks).
const MaxCountPages = 10

// CountQueue counts a queue's tasks from its indexes: one LIST per 1,000
// live tasks (of their parent, index/: every shard of both claim
// indexes at once; at most MaxCountPages of each), one per rare status
// (failed, cancelled, expired) per 1,000 such tasks, at most
// MaxCountPages each, plus one LIST of its slots when it has
// max_concurrency (and one per 1,000 records where the layout gives the
// queue's records a prefix: see QueueCounts.Completed). It reads no task
// record, so pending and running are not told apart (Running does it for
// a queue with slots). d is the queue's declaration (queues.Declaration's
// Settings): its name, shards and max_concurrency.
func (q *Queue) CountQueue(ctx context.Context, d Settings, now time.Time) (QueueCounts, error) {
	c, _, err := q.count(ctx, d, norm(now), nil)
	return c, err
}

// countDetail is what a count keeps for Stats beyond the counts.
type countDetail struct {
	due    []marker    // the due claim-index markers
	recent []time.Time // when each status/ entry was written, by status
	status []Status
}

// count is CountQueue, keeping what detail asks for (nil: nothing).
func (q *Queue) count(ctx context.Context, d Settings, now time.Time, detail *countDetail) (QueueCounts, *countDetail, error) {
	var c QueueCounts
	each := func(prefix string, fn func(store.Info)) error {
		after := ""
		for pages := 0; ; pages++ {
			if pages == MaxCountPages {
				c.AtLeast = true
				return nil
			}
			page, err := q.store.List(ctx, prefix, after, store.MaxListLimit)
			if err != nil {
				return fmt.Errorf("count queue %s: %w", d.Name, err)
			}
			for _, o := range page.Items {
				fn(o)
			}
			if !page.Truncated || len(page.Items) == 0 {
				return nil
			}
			after = page.Items[len(page.Items)-1].Key
		}
	}
	shards := d.ReadShards
	// The claim indexes: one LIST of their parent reads both while they
	// are small, at most MaxCountPages pages of each; a deadline/ that
	// uses up its pages is jumped over (StartAfter), so ready/ is counted
	// too.
	for after, pages := "", map[string]int{}; ; {
		page, err := q.store.List(ctx, indexesPrefix(d.Name), after, store.MaxListLimit)
		if err != nil {
			return QueueCounts{}, nil, fmt.Errorf("count queue %s: %w", d.Name, err)
		}
		for _, o := range page.Items {
			m, ok := parseMarker(o.Key)
			if !ok || m.queue != d.Name {
				continue
			}
			c.Live++
			if !m.due(now) {
				c.Delayed++
			} else if detail != nil {
				detail.due = append(detail.due, m)
			}
		}
		if !page.Truncated || len(page.Items) == 0 {
			break
		}
		after = page.Items[len(page.Items)-1].Key
		root := indexRootOf(after)
		if pages[root]++; pages[root] < MaxCountPages {
			continue
		}
		c.AtLeast = true
		if root == "" {
			break
		}
		after = rootEnd(root) // on to the next index (priority.go)
	}
	for _, st := range []struct {
		status Status
		n      *int
	}{{StatusFailed, &c.Failed}, {StatusCancelled, &c.Cancelled}, {StatusExpired, &c.Expired}} {
		prefix := statusPrefix(st.status, d.Name)
		err := each(prefix, func(o store.Info) {
			if validID(o.Key[len(prefix):]) != nil {
				return
			}
			*st.n++
			if detail != nil {
				detail.recent = append(detail.recent, o.LastModified)
				detail.status = append(detail.status, st.status)
			}
		})
		if err != nil {
			return QueueCounts{}, nil, err
		}
	}
	if prefixes := recordPrefixes(d.Name, shards); len(prefixes) > 0 {
		records := 0
		for _, prefix := range prefixes {
			if err := each(prefix, func(store.Info) { records++ }); err != nil {
				return QueueCounts{}, nil, err
			}
		}
		c.Completed = ptr(completedFrom(records, c))
	}
	if d.MaxConcurrency > 0 {
		page, err := q.store.List(ctx, slotPrefix(d.Name), "", store.MaxListLimit)
		if err != nil {
			return QueueCounts{}, nil, fmt.Errorf("count slots of %s: %w", d.Name, err)
		}
		n := 0
		for _, it := range page.Items {
			if !slotIsFree(it.Size) {
				n++
			}
		}
		c.Running = &n
	}
	return c, detail, nil
}

// completedFrom is the count of completed (or archived) tasks among a
// queue's records: those not counted live, failed, cancelled or expired.
func completedFrom(records int, c QueueCounts) int {
	return max(0, records-c.Live-c.Failed-c.Cancelled-c.Expired)
}

// RecentWindow is how far back QueueStats.Recent counts.
const RecentWindow = time.Hour

// maxOldestChecks bounds the records Stats reads to find the oldest
// pending task.
const maxOldestChecks = 10

// QueueStats describe one queue at a time.
type QueueStats struct {
	Queue    string      `json:"queue"`
	Paused   bool        `json:"paused"`
	PausedAt *time.Time  `json:"paused_at,omitempty"`
	Counts   QueueCounts `json:"counts"`
	// OldestPendingAt is when the oldest pending task that is due became
	// available, and OldestPendingAgeSeconds how long it has waited
	// since: how far behind the queue's workers are. Absent when no
	// pending task is due (or the oldest due markers all belong to
	// running tasks or are stale: it reads at most 10 records).
	OldestPendingAt         *time.Time `json:"oldest_pending_at,omitempty"`
	OldestPendingAgeSeconds *int64     `json:"oldest_pending_age_seconds,omitempty"`
	// Recent is the throughput of the rare ends over the last hour.
	Recent RecentCounts `json:"recent"`
	At     time.Time    `json:"at"`
}

// RecentCounts are the tasks that became failed, cancelled or expired
// within the last WindowSeconds, from when their status/ entry was
// written. Completions are not counted: there is no index of them, and
// one would cost a write per completed task.
type RecentCounts struct {
	WindowSeconds int64 `json:"window_seconds"`
	Failed        int   `json:"failed"`
	Cancelled     int   `json:"cancelled"`
	Expired       int   `json:"expired"`
}

// Stats reads a queue's counts (CountQueue's LISTs, the same requests),
// the oldest due pending task (a GET per due marker, the oldest first, at
// most 10) and the rare ends of the last hour (from the same LISTs, no
// request more). d is the queue's declaration, read by the caller
// (package queues: Registry.Get, then Declaration.Settings), which also
// says whether it is paused.
func (q *Queue) Stats(ctx context.Context, d Settings, now time.Time) (QueueStats, error) {
	now = norm(now)
	c, detail, err := q.count(ctx, d, now, &countDetail{})
	if err != nil {
		return QueueStats{}, err
	}
	st := QueueStats{Queue: d.Name, Paused: d.Paused, PausedAt: d.PausedAt, Counts: c, At: now,
		Recent: RecentCounts{WindowSeconds: int64(RecentWindow / time.Second)}}
	since := now.Add(-RecentWindow)
	for i, at := range detail.recent {
		if at.Before(since) {
			continue
		}
		switch detail.status[i] {
		case StatusFailed:
			st.Recent.Failed++
		case StatusCancelled:
			st.Recent.Cancelled++
		case StatusExpired:
			st.Recent.Expired++
		}
	}
	due := detail.due
	sort.Slice(due, func(i, j int) bool { return due[i].available.Before(due[j].available) })
	for _, m := range due[:min(len(due), maxOldestChecks)] {
		t, _, err := q.load(ctx, m.queue, m.id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return QueueStats{}, err
		}
		if t.Status == StatusPending && t.IndexKey == m.key && !t.AvailableAt.After(now) {
			st.OldestPendingAt = ptr(t.AvailableAt)
			st.OldestPendingAgeSeconds = ptr(int64(now.Sub(t.AvailableAt) / time.Second))
			break
		}
	}
	return st, nil
}
