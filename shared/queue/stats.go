package queue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/s3q/s3q/shared/store"

	"github.com/s3q/s3q/shared/wire"
)

type QueueCounts = wire.QueueCounts

// capCount marks the count of c named name as a lower bound.
func capCount(c *QueueCounts, name string) {
	c.AtLeast = true
	if !slices.Contains(c.Capped, name) {
		c.Capped = append(c.Capped, name)
	}
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
	each := func(name, prefix string, fn func(store.Info)) error {
		after := ""
		for pages := 0; ; pages++ {
			if pages == MaxCountPages {
				capCount(&c, name)
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
			if m.expired(now) {
				// Past its deadline: expired on every read (Task.AsOf),
				// whether or not the sweep has written it yet.
				c.Expired++
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
		capCount(&c, "live")
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
		err := each(string(st.status), prefix, func(o store.Info) {
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
	if prefixes := recordPrefixes(d.Name, shards); len(prefixes) > 0 && !c.IsCapped("live") {
		// Completed is records less the others: unknown while live is a
		// lower bound (the records of the live tasks past the cap would
		// count as completed), and a lower bound while records is.
		records := 0
		for _, prefix := range prefixes {
			if err := each("completed", prefix, func(store.Info) { records++ }); err != nil {
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

type QueueStats = wire.QueueStats

type RecentCounts = wire.RecentCounts

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
		MaxPerSecond: rateOf(d), Burst: burstOf(d),
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
