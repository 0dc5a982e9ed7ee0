package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/s3q/s3q/shared/store"
)

// layoutVersion is the bucket layout this build reads and writes
// (keys.go). Layout 1 kept every task of every queue under one tasks/
// prefix; layout 2 puts everything of a queue under q/{queue}/; layout 3
// puts a queue's two claim indexes under one folder, q/{queue}/index/
// (deadline/ and ready/), so that one LIST reads both: an empty claim
// costs one LIST, not two.
const layoutVersion = 3

// LayoutKey is the layout version object at the bucket's root (under the
// deployment's prefix): {"layout": 3}.
const LayoutKey = "s3q.json"

// ErrLayout is a bucket written by a build of another layout. Nothing is
// read or written: layouts are never mixed in one bucket.
var ErrLayout = errors.New("queue: the bucket has another layout")

// layoutDoc is the body of LayoutKey.
type layoutDoc struct {
	Layout    int       `json:"layout"`
	CreatedAt time.Time `json:"created_at"`
}

// CheckLayout makes sure s is a bucket of this build's layout: it reads
// LayoutKey (one GET) and returns an error wrapping ErrLayout that names
// both versions when it says another. A bucket without it is given it
// (create-only), unless it holds keys of layout 1 (tasks/ or queues/,
// one LIST each), which is refused as layout 1. Every process that
// serves a bucket calls it once at start: queues.Open does, and the
// functions, s3q dev and the CLI's commands that work on the bucket
// directly, which build their Queue with queues.New, call it apart.
func CheckLayout(ctx context.Context, s store.Store, now time.Time) error {
	for attempt := 0; attempt < 2; attempt++ {
		obj, err := s.Get(ctx, LayoutKey)
		if err == nil {
			var d layoutDoc
			if err := json.Unmarshal(obj.Body, &d); err != nil || d.Layout == 0 {
				return fmt.Errorf("%s is not a layout version object: %w", LayoutKey, ErrLayout)
			}
			if d.Layout != layoutVersion {
				return fmt.Errorf("bucket has layout %d, this build uses layout %d (no process mixes layouts; see docs/layout.md): %w", d.Layout, layoutVersion, ErrLayout)
			}
			return nil
		}
		if !errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("read %s: %w", LayoutKey, err)
		}
		for _, old := range []string{"tasks/", "queues/"} {
			page, err := s.List(ctx, old, "", 1)
			if err != nil {
				return fmt.Errorf("check for layout 1: %w", err)
			}
			if len(page.Items) > 0 {
				return fmt.Errorf("bucket has layout 1 (keys under %s), this build uses layout %d (no process mixes layouts; see docs/layout.md): %w", old, layoutVersion, ErrLayout)
			}
		}
		body, _ := json.Marshal(layoutDoc{Layout: layoutVersion, CreatedAt: norm(now)})
		if _, err := s.PutIfAbsent(ctx, LayoutKey, body); err == nil {
			return nil
		} else if !errors.Is(err, store.ErrPrecondition) {
			// A lost answer: read again, which sees our object.
			if attempt == 1 {
				return fmt.Errorf("write %s: %w", LayoutKey, err)
			}
		}
	}
	return fmt.Errorf("write %s: it keeps changing: %w", LayoutKey, ErrConflict)
}
