// Package tasktypes loads the per-task-type defaults of a deployment from
// config/task_types.json in the bucket and serves them to the queue
// (queue.DefaultsSource), cached for a short time.
//
// The file:
//
//	{
//	  "task_types": {
//	    "email.send":   {"ttl": "1h", "max_attempts": 5},
//	    "report.build": {"ttl": "7d", "ttl_from": "first_attempt", "timeout": "15m"}
//	  }
//	}
//
// Every field is optional: ttl (a duration such as "90s", "30m", "1h",
// "7d", or a number of seconds; more than 0), ttl_from ("submission" or
// "first_attempt"), max_attempts (1-1000), timeout (the lease length when
// a claim names none; more than 0, at most 12h). A request's own values
// always win; then the parent's deadline for a child; then these; then the
// global default TTL. Unknown fields, bad durations, bad ttl_from values
// and bad task type names are errors, with the type and field named.
package tasktypes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/clip"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// Key is where the defaults live in the bucket.
const Key = "config/task_types.json"

// DefaultCacheFor is how long one read of the file serves lookups.
const DefaultCacheFor = 30 * time.Second

// typeConfig is one task type's entry in the file.
type typeConfig struct {
	TTL         *queue.Duration `json:"ttl"`
	TTLFrom     *string         `json:"ttl_from"`
	MaxAttempts *int            `json:"max_attempts"`
	Timeout     *queue.Duration `json:"timeout"`
}

// Parse validates the file's contents and returns the defaults by task
// type. An empty document (or {}) has no defaults.
func Parse(b []byte) (map[string]queue.TypeDefaults, error) {
	out := map[string]queue.TypeDefaults{}
	if len(bytes.TrimSpace(b)) == 0 {
		return out, nil
	}
	var doc struct {
		TaskTypes map[string]json.RawMessage `json:"task_types"`
	}
	if err := strict(b, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", Key, err)
	}
	names := make([]string, 0, len(doc.TaskTypes))
	for name := range doc.TaskTypes {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := queue.ValidateTaskType("task_types", name); err != nil {
			var ve *queue.ValidationError
			errors.As(err, &ve)
			return nil, fmt.Errorf("%s: task type %q: %s", Key, clip.Input(name), ve.Message)
		}
		d, err := parseType(doc.TaskTypes[name])
		if err != nil {
			return nil, fmt.Errorf("%s: task type %q: %w", Key, name, err)
		}
		out[name] = d
	}
	return out, nil
}

func parseType(raw json.RawMessage) (queue.TypeDefaults, error) {
	var c typeConfig
	if err := strict(raw, &c); err != nil {
		return queue.TypeDefaults{}, err
	}
	var d queue.TypeDefaults
	if c.TTL != nil {
		if c.TTL.Std() <= 0 {
			return d, fmt.Errorf("ttl: must be more than 0, got %s", c.TTL)
		}
		d.TTL = ptr(c.TTL.Std())
	}
	if c.TTLFrom != nil {
		switch f := queue.TTLFrom(*c.TTLFrom); f {
		case queue.TTLFromSubmission, queue.TTLFromFirstAttempt:
			d.TTLFrom = f
		default:
			return d, fmt.Errorf("ttl_from: %q is not one of submission, first_attempt", clip.Input(*c.TTLFrom))
		}
	}
	if c.MaxAttempts != nil {
		if *c.MaxAttempts < 1 || *c.MaxAttempts > queue.MaxAttemptsLimit {
			return d, fmt.Errorf("max_attempts: must be between 1 and %d, got %d", queue.MaxAttemptsLimit, *c.MaxAttempts)
		}
		d.MaxAttempts = *c.MaxAttempts
	}
	if c.Timeout != nil {
		if c.Timeout.Std() <= 0 || c.Timeout.Std() > queue.MaxLease {
			return d, fmt.Errorf("timeout: must be more than 0 and at most %s, got %s", queue.FormatDuration(queue.MaxLease), c.Timeout)
		}
		d.Timeout = c.Timeout.Std()
	}
	return d, nil
}

// strict decodes one JSON object, refusing unknown fields and trailing data.
func strict(b []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return cleanJSONError(err)
	}
	if dec.More() {
		return errors.New("trailing data after the JSON object")
	}
	return nil
}

// cleanJSONError turns encoding/json's messages into ones about the file.
func cleanJSONError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		want := "a different JSON value"
		switch te.Type.Kind() {
		case reflect.Map, reflect.Struct:
			want = "an object"
		case reflect.String:
			want = "a string"
		case reflect.Int, reflect.Int64, reflect.Float64:
			want = "a number"
		}
		if te.Field != "" {
			return fmt.Errorf("%s: want %s, got %s", te.Field, want, te.Value)
		}
		return fmt.Errorf("want %s, got %s", want, te.Value)
	}
	msg := err.Error()
	msg = trimPrefix(msg, "json: ")
	return errors.New(msg)
}

func trimPrefix(s, p string) string {
	if len(s) >= len(p) && s[:len(p)] == p {
		return s[len(p):]
	}
	return s
}

func ptr[T any](v T) *T { return &v }

// Source serves the defaults in the bucket's config/task_types.json,
// reading the file at most once per CacheFor. A missing file means no
// defaults. A file that fails to parse is an error for every lookup while
// no good version has been read; once one has, the last good version keeps
// serving and Err reports the problem. It is safe for concurrent use.
type Source struct {
	store    store.Store
	cacheFor time.Duration

	mu       sync.Mutex
	loadedAt time.Time
	loaded   bool
	defs     map[string]queue.TypeDefaults // last good version
	good     bool
	err      error // the last load's error
}

var _ queue.DefaultsSource = (*Source)(nil)

// NewSource returns a Source on s. cacheFor <= 0 means DefaultCacheFor.
func NewSource(s store.Store, cacheFor time.Duration) *Source {
	if cacheFor <= 0 {
		cacheFor = DefaultCacheFor
	}
	return &Source{store: s, cacheFor: cacheFor}
}

// TaskTypeDefaults implements queue.DefaultsSource.
func (s *Source) TaskTypeDefaults(ctx context.Context, taskType string, now time.Time) (queue.TypeDefaults, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.loaded || now.Before(s.loadedAt) || now.Sub(s.loadedAt) >= s.cacheFor {
		s.load(ctx, now)
	}
	if !s.good {
		return queue.TypeDefaults{}, false, s.err
	}
	d, ok := s.defs[taskType]
	return d, ok, nil
}

// Err returns the error of the last read of the file, nil when it was
// good (or missing).
func (s *Source) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// load reads and parses the file. Callers hold s.mu.
func (s *Source) load(ctx context.Context, now time.Time) {
	s.loaded, s.loadedAt = true, now
	obj, err := s.store.Get(ctx, Key)
	switch {
	case errors.Is(err, store.ErrNotFound):
		s.defs, s.good, s.err = map[string]queue.TypeDefaults{}, true, nil
		return
	case err != nil:
		s.err = fmt.Errorf("read %s: %w", Key, err)
		if !s.good {
			s.loaded = false // nothing to serve: try again at the next lookup
		}
		return
	}
	defs, err := Parse(obj.Body)
	if err != nil {
		s.err = err
		return
	}
	s.defs, s.good, s.err = defs, true, nil
}
