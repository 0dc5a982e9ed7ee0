package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/store"
)

// Declared queues. A queue is declared by
// q/{name}/queue.json, written create-only and changed only by
// compare-and-swap. Submitting to an undeclared queue is ErrQueueNotFound
// when Options.RequireDeclared is set; otherwise (auto_declare) the first
// submit declares it with no settings of its own.

// Limits of a declaration.
const (
	DefaultMaxQueues    = 1000
	MaxQueueShards      = MaxShards
	MaxConcurrencyCap   = 1000 // most slots of a queue: one LIST page
	DefaultDeclCacheFor = 30 * time.Second
)

// Target is a queue's push target: exactly one of Lambda
// and URL. The dispatch function delivers the queue's tasks to it.
type Target struct {
	// Lambda is a function name or ARN (optionally with a version or alias).
	Lambda string `json:"lambda,omitempty"`
	// URL is an https URL (http only where the deployment allows insecure
	// targets, as s3q dev does).
	URL string `json:"url,omitempty"`
	// Secret names the SSM parameter holding the HMAC secret that signs
	// deliveries to URL. Required with URL, refused with Lambda.
	Secret string `json:"secret,omitempty"`
}

// Declaration is a declared queue: q/{name}/queue.json. Its defaults apply
// to submits that give none and whose task type has none (request > task
// type > queue > global).
type Declaration struct {
	// Name is the queue's name (ValidateQueueName); it is the key's.
	Name string `json:"name"`
	// TTL is the queue's default time to live. Defaults to none.
	TTL *Duration `json:"ttl,omitempty"`
	// TTLFrom is the queue's default ttl_from. Defaults to none (submission).
	TTLFrom TTLFrom `json:"ttl_from,omitempty"`
	// MaxAttempts is the queue's default max_attempts. Defaults to none (3).
	MaxAttempts int `json:"max_attempts,omitempty"`
	// Timeout is the queue's default lease length. Defaults to none (5m).
	Timeout *Duration `json:"timeout,omitempty"`
	// Shards spreads the queue's claim-index markers over this many key
	// ranges (1 to 16). Fixed at the queue's first declaration, kept
	// through a delete. Defaults to the deployment's shards (Options.Shards).
	Shards int `json:"shards,omitempty"`
	// MaxConcurrency is the most tasks of the queue running at once (each
	// holds one of that many slots, q/{queue}/slots/{n}); every claim, pull
	// or push, must take a slot. Defaults to 0: no limit and no slots.
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// Target, when set, makes the queue a push queue.
	Target *Target `json:"target,omitempty"`
	// AutoDeclared is true for a queue declared by a submit (auto_declare).
	AutoDeclared bool `json:"auto_declared,omitempty"`
	// Paused is true while the queue is paused (PauseQueue): claims, pull
	// or push, take nothing from it; submits and the sweep go on.
	// PausedAt is when it was paused. Neither is a setting: a
	// declaration's update keeps them.
	Paused    bool       `json:"paused,omitempty"`
	PausedAt  *time.Time `json:"paused_at,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	UpdatedAt time.Time  `json:"updated_at"`
}

// settings returns d with only what a caller may set.
func (d Declaration) settings() Declaration {
	return Declaration{Name: d.Name, TTL: d.TTL, TTLFrom: d.TTLFrom, MaxAttempts: d.MaxAttempts,
		Timeout: d.Timeout, Shards: d.Shards, MaxConcurrency: d.MaxConcurrency, Target: d.Target}
}

var (
	// A function name, or a full or partial ARN, with an optional qualifier.
	reLambdaTarget = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:lambda:[a-z0-9-]+:[0-9]{12}:function:|[0-9]{12}:function:)?[A-Za-z0-9_-]{1,64}(:(\$LATEST|[A-Za-z0-9_-]{1,128}))?$`)
	// An SSM parameter name or ARN.
	reSSMParameter = regexp.MustCompile(`^(arn:aws[a-zA-Z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/)?[A-Za-z0-9_.\-/]{1,1000}$`)
)

// validate checks the settable fields of d; insecure allows http targets.
func (d *Declaration) validate(insecure bool) error {
	if err := ValidateQueueName(d.Name); err != nil {
		return err
	}
	if d.TTL != nil && d.TTL.Std() <= 0 {
		return invalid("ttl", "must be more than 0 (leave it out for no default)")
	}
	if d.TTL != nil && d.TTL.Std() > maxTime.Sub(minTime) {
		return invalid("ttl", "is too large")
	}
	switch d.TTLFrom {
	case "", TTLFromSubmission, TTLFromFirstAttempt:
	default:
		return invalid("ttl_from", "%q is not one of submission, first_attempt", clip.Input(string(d.TTLFrom)))
	}
	if d.MaxAttempts < 0 || d.MaxAttempts > MaxAttemptsLimit {
		return invalid("max_attempts", "must be between 1 and %d (0 or absent: no queue default)", MaxAttemptsLimit)
	}
	if err := checkTimeout(d.Timeout); err != nil {
		return err
	}
	if d.Shards < 0 || d.Shards > MaxQueueShards {
		return invalid("shards", "must be between 1 and %d (0 or absent: the deployment's); a queue's shards are fixed when it is first declared", MaxQueueShards)
	}
	if d.MaxConcurrency < 0 || d.MaxConcurrency > MaxConcurrencyCap {
		return invalid("max_concurrency", "must be between 1 and %d (0 or absent: no limit)", MaxConcurrencyCap)
	}
	if d.Target != nil {
		return d.Target.Validate(insecure)
	}
	return nil
}

// Validate checks a target's form (not whether the deployment lets a queue
// use it: Options.CheckTarget): exactly one of lambda and url; a Lambda
// function name or ARN; an absolute https URL (http too when insecure, as
// in s3q dev) without credentials or fragment, with the SSM parameter name
// of its signing secret. A bad field is a *ValidationError naming it
// (target, target.lambda, target.url, target.secret).
func (t Target) Validate(insecure bool) error {
	switch {
	case t.Lambda == "" && t.URL == "":
		return invalid("target", "give one of target.lambda and target.url")
	case t.Lambda != "" && t.URL != "":
		return invalid("target.url", "give target.lambda or target.url, not both")
	case t.Lambda != "":
		if !reLambdaTarget.MatchString(t.Lambda) {
			return invalid("target.lambda", "%q is not a Lambda function name or ARN", clip.Input(t.Lambda))
		}
		if t.Secret != "" {
			return invalid("target.secret", "is only for target.url; a Lambda target is invoked with IAM")
		}
		return nil
	}
	u, err := url.Parse(t.URL)
	if err != nil || u.Host == "" || u.Opaque != "" {
		return invalid("target.url", "%q is not an absolute URL", clip.Input(t.URL))
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && insecure:
	case u.Scheme == "http":
		return invalid("target.url", "must be https (http only where the deployment allows insecure targets)")
	default:
		return invalid("target.url", "must be https, not %q", clip.Input(u.Scheme))
	}
	if u.User != nil {
		return invalid("target.url", "must not carry credentials; sign with target.secret")
	}
	if u.Fragment != "" || len(t.URL) > 2048 {
		return invalid("target.url", "must have no fragment and be at most 2048 bytes")
	}
	if t.Secret == "" {
		return invalid("target.secret", "is required with target.url: the SSM parameter name of the signing secret")
	}
	if !reSSMParameter.MatchString(t.Secret) || strings.Contains(t.Secret, "//") {
		return invalid("target.secret", "%q is not an SSM parameter name", clip.Input(t.Secret))
	}
	return nil
}

// declEntry is a cached declaration; found is false for an undeclared queue.
type declEntry struct {
	d     Declaration
	found bool
	at    time.Time
}

// Declare creates the queue d.Name, or replaces its settings by
// compare-and-swap. It returns the stored declaration and whether it was
// created. Only the settable fields of d count (not Name's timestamps or
// AutoDeclared). A bad field is a *ValidationError, shards changed after
// creation too; a new queue past Options.MaxQueues is ErrTooManyQueues;
// nothing is written on either.
func (q *Queue) Declare(ctx context.Context, d Declaration, now time.Time) (Declaration, bool, error) {
	now = norm(now)
	d = d.settings()
	if err := d.validate(q.opts.AllowInsecureTargets); err != nil {
		return Declaration{}, false, err
	}
	if d.Target != nil && q.opts.CheckTarget != nil {
		if err := q.opts.CheckTarget(ctx, d.Name, *d.Target); err != nil {
			return Declaration{}, false, err
		}
	}
	for i := 0; i < maxCASAttempts; i++ {
		cur, etag, err := q.loadQueue(ctx, d.Name)
		if errors.Is(err, ErrQueueNotFound) {
			d.CreatedAt, d.UpdatedAt = now, now
			if d.Shards == 0 {
				d.Shards = cur.Shards // a deleted queue's, kept by its tombstone
			}
			if d.Shards == 0 {
				d.Shards = q.opts.Shards
			}
			if cur.Shards != 0 && d.Shards != cur.Shards {
				return Declaration{}, false, invalid("shards", "is fixed when the queue is first declared: queue %s had %d before it was deleted", d.Name, cur.Shards)
			}
			if err := q.noteTarget(ctx, d); err != nil {
				return Declaration{}, false, err
			}
			err := q.createQueue(ctx, d, etag)
			if errors.Is(err, store.ErrPrecondition) {
				continue // declared a moment ago: replace it
			}
			if err != nil {
				return Declaration{}, false, err
			}
			q.cacheQueue(d, true, now)
			return d, true, nil
		}
		if err != nil {
			return Declaration{}, false, err
		}
		if d.Shards == 0 {
			d.Shards = cur.Shards
		}
		if d.Shards != cur.Shards {
			return Declaration{}, false, invalid("shards", "is fixed at creation: the queue has %d", cur.Shards)
		}
		d.CreatedAt, d.UpdatedAt = cur.CreatedAt, now
		d.Paused, d.PausedAt = cur.Paused, cur.PausedAt // not settings: pause.go
		if err := q.noteTarget(ctx, d); err != nil {
			return Declaration{}, false, err
		}
		body, err := json.Marshal(d)
		if err != nil {
			return Declaration{}, false, fmt.Errorf("encode queue %s: %w", d.Name, err)
		}
		// A lost answer is recognised on a re-read (the body carries its
		// update time).
		_, err = store.SwapOwn(ctx, q.store, QueueKey(d.Name), body, etag, nil)
		if errors.Is(err, store.ErrPrecondition) {
			continue
		}
		if err != nil {
			return Declaration{}, false, fmt.Errorf("write queue %s: %w", d.Name, err)
		}
		if cur.Target != nil && d.Target == nil {
			_ = q.store.Delete(ctx, TargetKey(d.Name)) // best effort: a stale entry costs the dispatcher one GET
		}
		q.cacheQueue(d, true, now)
		return d, false, nil
	}
	return Declaration{}, false, fmt.Errorf("declare queue %s: %w", d.Name, ErrConflict)
}

// TargetNote is the body of a push queue's entry in the push queues'
// index (TargetKey): the update time of the declaration it announces.
type TargetNote struct {
	UpdatedAt time.Time `json:"updated_at"`
}

// noteTarget writes the push queues' index entry of d when d has a
// target, before d is written: so a dispatcher that lists the index
// (one LIST, however many pull queues exist) finds every push queue,
// and re-reads a declaration only when its entry changed. A
// declaration older than its entry is not written yet (or its write
// failed): the dispatcher reads it again on its next run.
func (q *Queue) noteTarget(ctx context.Context, d Declaration) error {
	if d.Target == nil {
		return nil
	}
	body, _ := json.Marshal(TargetNote{UpdatedAt: d.UpdatedAt})
	if _, err := store.PutOwn(ctx, q.store, TargetKey(d.Name), body); err != nil {
		return fmt.Errorf("write %s: %w", TargetKey(d.Name), err)
	}
	return nil
}

// createQueue writes a new declaration, after checking that the
// deployment holds fewer than MaxQueues (one delimited LIST of q/ per
// 1,000 queues): create-only, or over the tombstone of a deleted queue of
// that name (If-Match on tombstone, its ETag). Two creates racing at the
// limit may both pass: the limit bounds what a caller can make, not to
// the unit.
func (q *Queue) createQueue(ctx context.Context, d Declaration, tombstone string) error {
	n, err := q.countQueues(ctx, q.opts.MaxQueues)
	if err != nil {
		return err
	}
	if n >= q.opts.MaxQueues {
		return fmt.Errorf("declare queue %s: %d queues exist: %w", d.Name, n, ErrTooManyQueues)
	}
	body, err := json.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode queue %s: %w", d.Name, err)
	}
	// A write whose answer was lost is recognised on a re-read by its
	// name and creation time (this writer's clock, to the microsecond),
	// which a replace (PUT /queues/{queue}) made meanwhile keeps: not by
	// its bytes, which that replace changed.
	mine := func(stored []byte) bool {
		var got Declaration
		return json.Unmarshal(stored, &got) == nil && got.Name == d.Name && got.CreatedAt.Equal(d.CreatedAt)
	}
	if tombstone != "" {
		_, err = store.SwapOwn(ctx, q.store, QueueKey(d.Name), body, tombstone, mine)
	} else {
		_, err = store.CreateOwn(ctx, q.store, QueueKey(d.Name), body, mine)
	}
	if errors.Is(err, store.ErrNotFound) {
		err = store.ErrPrecondition // the tombstone went: someone else's write
	}
	if err != nil {
		return fmt.Errorf("write queue %s: %w", d.Name, err)
	}
	return nil
}

// countQueues counts the queues' folders (a deleted queue's too: its
// tombstone and terminal records stay), stopping once it has seen limit.
func (q *Queue) countQueues(ctx context.Context, limit int) (int, error) {
	n, after := 0, ""
	for {
		dirs, truncated, err := store.ListDirs(ctx, q.store, prefixQueues, after, store.MaxListLimit)
		if err != nil {
			return 0, fmt.Errorf("list queues: %w", err)
		}
		for _, d := range dirs {
			if queueNameFromDir(d) != "" {
				n++
			}
		}
		if n >= limit {
			// At the limit: a deleted queue's folder stays (its
			// tombstone, its finished tasks) and does not count.
			return q.countDeclared(ctx, limit)
		}
		if !truncated || len(dirs) == 0 {
			return n, nil
		}
		after = dirs[len(dirs)-1] + "~"
	}
}

// countDeclared counts the queues' declarations that are not tombstones,
// by a HEAD of each (only when the folders reach the limit), stopping
// once it has seen limit.
func (q *Queue) countDeclared(ctx context.Context, limit int) (int, error) {
	n := 0
	for dir, err := range store.AllDirs(ctx, q.store, prefixQueues) {
		if err != nil {
			return 0, fmt.Errorf("list queues: %w", err)
		}
		name := queueNameFromDir(dir)
		if name == "" {
			continue
		}
		info, err := q.store.Head(ctx, QueueKey(name))
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return 0, fmt.Errorf("head queue %s: %w", name, err)
		}
		if info.Size >= maxTombstoneBytes {
			if n++; n >= limit {
				return n, nil
			}
		}
	}
	return n, nil
}

// maxTombstoneBytes is more than any tombstone's size and less than any
// declaration's (which holds a name and two times).
const maxTombstoneBytes = 32

// tombstone is the body a deleted queue's declaration is replaced by: a
// key is never deleted and created again (versitygw refuses
// If-None-Match while a delete marker is the current version), so a
// queue declared again swaps its tombstone by If-Match. It keeps the
// queue's shards, which are fixed: a queue declared again gets them.
type queueTomb struct {
	Shards int `json:"shards,omitempty"`
}

// isTombstone reports whether a declaration's body is a tombstone (no
// name); every declaration names its queue.
func isTombstone(body []byte) bool {
	var d struct {
		Name string `json:"name"`
	}
	return json.Unmarshal(body, &d) != nil || d.Name == ""
}

// loadQueue reads a declaration; ErrQueueNotFound when there is none,
// with the ETag and shards of the tombstone of a deleted one.
func (q *Queue) loadQueue(ctx context.Context, name string) (Declaration, string, error) {
	obj, err := q.store.Get(ctx, QueueKey(name))
	if errors.Is(err, store.ErrNotFound) {
		return Declaration{}, "", fmt.Errorf("queue %s: %w", name, ErrQueueNotFound)
	}
	if err != nil {
		return Declaration{}, "", fmt.Errorf("get queue %s: %w", name, err)
	}
	if isTombstone(obj.Body) {
		var ts queueTomb
		_ = json.Unmarshal(obj.Body, &ts)
		return Declaration{Name: name, Shards: ts.Shards}, obj.ETag, fmt.Errorf("queue %s: %w", name, ErrQueueNotFound)
	}
	var d Declaration
	if err := json.Unmarshal(obj.Body, &d); err != nil {
		return Declaration{}, "", fmt.Errorf("decode queue %s: %w", name, err)
	}
	if d.Shards <= 0 {
		d.Shards = q.opts.Shards
	}
	return d, obj.ETag, nil
}

func (q *Queue) cacheQueue(d Declaration, found bool, now time.Time) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.decls) >= maxSkip {
		clear(q.decls)
	}
	q.decls[d.Name] = declEntry{d: d, found: found, at: now}
}

// GetQueue returns the declaration of a queue, read from the store.
func (q *Queue) GetQueue(ctx context.Context, name string, now time.Time) (Declaration, error) {
	if err := ValidateQueueName(name); err != nil {
		return Declaration{}, err
	}
	d, _, err := q.loadQueue(ctx, name)
	if err != nil {
		return Declaration{}, err
	}
	q.cacheQueue(d, true, norm(now))
	return d, nil
}

// declared returns the declaration of a queue from this Queue's cache
// (Options.DeclCacheFor) or the store. Without Options.RequireDeclared an
// undeclared queue is declared when create is set (a submit), and
// reported as a declaration with no settings otherwise (a claim);
// without it, an undeclared queue is ErrQueueNotFound. Only found
// declarations are cached, so a new queue is usable at once.
func (q *Queue) declared(ctx context.Context, name string, create bool, now time.Time) (Declaration, error) {
	for {
		q.mu.Lock()
		e, ok := q.decls[name]
		if ok && e.found && now.Sub(e.at) < q.opts.DeclCacheFor && !now.Before(e.at) {
			q.mu.Unlock()
			return e.d, nil
		}
		// One read per queue at a time: the submits of a batch, or the
		// fires of a tick, that miss together share it.
		if ch, busy := q.declLoading[name]; busy {
			q.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				return Declaration{}, ctx.Err()
			}
		}
		ch := make(chan struct{})
		q.declLoading[name] = ch
		q.mu.Unlock()
		d, err := q.readDeclared(ctx, name, create, now)
		q.mu.Lock()
		delete(q.declLoading, name)
		q.mu.Unlock()
		close(ch)
		return d, err
	}
}

// readDeclared is declared's read of the store.
func (q *Queue) readDeclared(ctx context.Context, name string, create bool, now time.Time) (Declaration, error) {
	d, tombstone, err := q.loadQueue(ctx, name)
	if errors.Is(err, ErrQueueNotFound) && !q.opts.RequireDeclared {
		shards := d.Shards // a deleted queue's, kept by its tombstone
		if shards == 0 {
			shards = q.opts.Shards
		}
		if !create {
			return Declaration{Name: name, Shards: shards}, nil
		}
		d = Declaration{Name: name, Shards: shards, AutoDeclared: true, CreatedAt: now, UpdatedAt: now}
		err = q.createQueue(ctx, d, tombstone)
		if errors.Is(err, store.ErrPrecondition) {
			d, _, err = q.loadQueue(ctx, name) // declared by someone else meanwhile
		}
	}
	if err != nil {
		return Declaration{}, err
	}
	q.cacheQueue(d, true, now)
	return d, nil
}

// ListQueuesRequest pages a listing of declared queues.
type ListQueuesRequest struct {
	// Limit is the most queues to return. Defaults to 100, at most 1000.
	Limit int
	// Cursor continues a listing from a previous NextCursor.
	Cursor string
}

// ListQueuesResult is one page of declared queues, by name.
type ListQueuesResult struct {
	Queues     []Declaration `json:"queues"`
	NextCursor string        `json:"next_cursor,omitempty"`
}

// ListQueues returns declared queues in name order: one delimited LIST
// of q/ (the queues' folders) and one GET per queue.
func (q *Queue) ListQueues(ctx context.Context, req ListQueuesRequest) (ListQueuesResult, error) {
	switch {
	case req.Limit == 0:
		req.Limit = 100
	case req.Limit < 0 || req.Limit > store.MaxListLimit:
		return ListQueuesResult{}, invalid("limit", "must be between 1 and %d", store.MaxListLimit)
	}
	after := ""
	if req.Cursor != "" {
		if !reQueue.MatchString(req.Cursor) {
			return ListQueuesResult{}, invalid("cursor", "is not a cursor from a previous listing")
		}
		after = QueuePrefix(req.Cursor) + "~"
	}
	dirs, truncated, err := store.ListDirs(ctx, q.store, prefixQueues, after, req.Limit)
	if err != nil {
		return ListQueuesResult{}, fmt.Errorf("list queues: %w", err)
	}
	out := ListQueuesResult{Queues: []Declaration{}}
	for _, dir := range dirs {
		name := queueNameFromDir(dir)
		if name == "" {
			continue
		}
		d, _, err := q.loadQueue(ctx, name)
		if errors.Is(err, ErrQueueNotFound) {
			continue // deleted, or a folder without a declaration
		}
		if err != nil {
			return ListQueuesResult{}, err
		}
		out.Queues = append(out.Queues, d)
	}
	if truncated && len(dirs) > 0 {
		out.NextCursor = queueNameFromDir(dirs[len(dirs)-1])
	}
	return out, nil
}

// maxDeleteChecks bounds the markers DeleteQueue checks against their
// records; more markers than this refuse the delete at once.
const maxDeleteChecks = 100

// DeleteQueue deletes a queue's declaration (replaces it by a tombstone,
// which reads as no declaration). A queue that still holds a
// live (pending or running) task is refused with ErrQueueNotEmpty: it checks each index marker against its record (at
// most 100, more refuse at once) and deletes the stale ones it meets. A
// submit that read the declaration within Options.DeclCacheFor before the
// delete may still land; declaring the queue again makes its tasks
// reachable again. A running task whose marker the sweep parked (in
// sweep/, not under the queue's folder) is not seen. The queue's folder
// stays: its finished tasks, its tombstone (which keeps its shards).
func (q *Queue) DeleteQueue(ctx context.Context, name string, now time.Time) error {
	now = norm(now)
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	d, etag, err := q.loadQueue(ctx, name)
	if err != nil {
		return err
	}
	checked := 0
	{
		for _, prefix := range []string{deadlineRoot(name), readyRoot(name)} {
			page, err := q.store.List(ctx, prefix, "", maxDeleteChecks+1)
			if err != nil {
				return fmt.Errorf("list %s: %w", prefix, err)
			}
			for _, o := range page.Items {
				m, ok := parseMarker(o.Key)
				if !ok {
					continue
				}
				if checked++; checked > maxDeleteChecks {
					return fmt.Errorf("queue %s has more than %d live tasks: %w", name, maxDeleteChecks, ErrQueueNotEmpty)
				}
				t, _, err := q.load(ctx, name, m.id)
				if err != nil && !errors.Is(err, ErrNotFound) {
					return err
				}
				if err == nil && t.IndexKey == m.key && !t.Status.Terminal() {
					return fmt.Errorf("queue %s: task %s is %s: %w", name, t.ID, t.Status, ErrQueueNotEmpty)
				}
				fresh := !m.available.Add(q.opts.StaleMarkerGrace).Before(now)
				if err != nil && fresh {
					// No record yet: a submit may be between its writes.
					return fmt.Errorf("queue %s: task %s is being submitted: %w", name, m.id, ErrQueueNotEmpty)
				}
				if !fresh {
					_ = q.store.Delete(ctx, m.key) // stale; best effort
				}
			}
		}
	}
	// A tombstone, by If-Match: a declaration changed meanwhile is kept.
	// A lost answer is recognised on a re-read: a tombstone is deleted
	// whoever wrote it.
	body, _ := json.Marshal(queueTomb{Shards: d.Shards})
	if _, err := store.SwapOwn(ctx, q.store, QueueKey(name), body, etag, nil); err != nil {
		if errors.Is(err, store.ErrPrecondition) {
			return fmt.Errorf("delete queue %s: changed meanwhile: %w", name, ErrConflict)
		}
		return fmt.Errorf("delete queue %s: %w", name, err)
	}
	if d.Target != nil {
		_ = q.store.Delete(ctx, TargetKey(name)) // best effort, as in Declare
	}
	q.mu.Lock()
	delete(q.decls, name)
	q.mu.Unlock()
	return nil
}

// shardsOf returns the shards a write puts a queue's markers in: its
// declaration's when this Queue has read it, else the deployment's.
// Readers list each claim index from its root, every shard at once, so
// either is found.
func (q *Queue) shardsOf(name string) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	if e, ok := q.decls[name]; ok && e.found && e.d.Shards > 0 {
		return e.d.Shards
	}
	return q.opts.Shards
}

// scoped applies a view's scope (In) to the queue a request names: empty
// becomes the scope, another name is a *ValidationError of field.
func (q *Queue) scoped(field, name string) (string, error) {
	if q.scope == "" || name == q.scope {
		return name, nil
	}
	if name == "" {
		return q.scope, nil
	}
	return "", invalid(field, "is %q, but the request is addressed to queue %q", clip.Input(name), q.scope)
}

// CheckQueue reports whether tasks may be submitted to a queue: nil when
// it is declared or Options.RequireDeclared is off (a submit would
// declare it), ErrQueueNotFound otherwise. A schedule is checked with it
// when it is made, so that it never fires into a queue that refuses its
// tasks.
func (q *Queue) CheckQueue(ctx context.Context, name string, now time.Time) error {
	if err := ValidateQueueName(name); err != nil {
		return err
	}
	_, err := q.declared(ctx, name, false, norm(now))
	return err
}
