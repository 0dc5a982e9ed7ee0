package events

import (
	"context"
	"sync"

	"github.com/s3q/s3q/shared/queue"
)

// Ring is a publisher that keeps the most recent events in memory, for
// `s3q dev`'s GET /events. It is safe for concurrent use.
type Ring struct {
	mu   sync.Mutex
	buf  []Record
	next int
	full bool
}

// Record is one event as GET /events shows it.
type Record struct {
	Source string `json:"source"`
	queue.Event
}

var _ queue.EventPublisher = (*Ring)(nil)

// NewRing returns a ring that keeps the last size events (at least 1).
func NewRing(size int) *Ring {
	if size < 1 {
		size = 1
	}
	return &Ring{buf: make([]Record, size)}
}

// Publish implements queue.EventPublisher; it always delivers.
func (r *Ring) Publish(_ context.Context, evs []queue.Event) ([]error, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, ev := range evs {
		r.buf[r.next] = Record{Source: queue.EventSource, Event: ev}
		r.next = (r.next + 1) % len(r.buf)
		if r.next == 0 {
			r.full = true
		}
	}
	return nil, nil
}

// Recent returns up to limit of the kept events, newest first; limit <= 0
// means all of them.
func (r *Ring) Recent(limit int) []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]Record, 0, limit)
	for i := 1; i <= limit; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}
