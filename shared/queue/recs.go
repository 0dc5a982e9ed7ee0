package queue

// The record cache: a Queue remembers the last version of each live task
// record it wrote or read (body and ETag), so that its next transition of
// that task is one conditional write instead of a GET and then a write.
// Complete, fail, reschedule and heartbeat after this process's claim or
// heartbeat, and a claim of a task this process submitted, skip their GET.
//
// A cached version is only ever a guess: the write is conditional on its
// ETag, so it lands only if the record is still exactly that version, and
// deciding on it is then the same as deciding on a fresh read. When the
// guess is wrong (another process wrote since), the write fails with a
// precondition and the transition reads the record and goes on as before:
// one round trip lost, nothing else. A transition the cached version
// refuses (a lease that looks lapsed, a token that does not match) reads
// the record before it answers, so no answer is ever based on the cache
// alone.

// cachedRec is one cached record version.
type cachedRec struct {
	t    Task
	etag string
	size int // what it holds in memory, about
}

// The record cache's bounds: it is cleared when it would pass either.
// Only live (pending, running) records are kept, and none whose input and
// output pass maxRecBytes/64 (a Lambda function has little memory).
const (
	maxRecs     = 10_000
	maxRecBytes = 32 << 20
)

// remember caches t as the version of its record with ETag etag; a
// terminal or purged record is forgotten instead (no transition follows
// it).
func (q *Queue) remember(t *Task, etag string) {
	size := 1024 + len(t.Input) + len(t.Output)
	if etag == "" || t.Status.Terminal() || t.PurgedAt != nil || size > maxRecBytes/64 {
		q.forget(t.Queue, t.ID)
		return
	}
	ref := t.Ref() // ids are unique within a queue only
	c := cachedRec{t: t.clone(), etag: etag, size: size}
	q.mu.Lock()
	defer q.mu.Unlock()
	if old, ok := q.recs[ref]; ok {
		q.recBytes -= old.size
	}
	if len(q.recs) >= maxRecs || q.recBytes+size > maxRecBytes {
		clear(q.recs)
		q.recBytes = 0
	}
	q.recs[ref] = c
	q.recBytes += size
}

// forget drops the cached version of a record: after a failed write,
// whose outcome or the record's state is not known.
func (q *Queue) forget(queue, id string) {
	ref := Ref(queue, id)
	q.mu.Lock()
	if old, ok := q.recs[ref]; ok {
		q.recBytes -= old.size
		delete(q.recs, ref)
	}
	q.mu.Unlock()
}

// cached returns a copy of the cached version of the record of task id
// of queue, if any (and, in a view, only a task of its queue).
func (q *Queue) cached(queue, id string) (Task, string, bool) {
	q.mu.Lock()
	c, ok := q.recs[Ref(queue, id)]
	q.mu.Unlock()
	if !ok || q.scope != "" && c.t.Queue != q.scope {
		return Task{}, "", false
	}
	return c.t.clone(), c.etag, true
}
