package store

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
)

// ProbePrefix is where Probe writes its scratch keys: one per run, never
// read by s3q. Their old versions go with the bucket's noncurrent-version
// lifecycle rule.
const ProbePrefix = "s3q-probe/"

// ErrNotHonoured means the server accepted a conditional write that it
// should have refused: it does not keep a promise s3q relies on, and a
// queue on it would lose or duplicate tasks.
var ErrNotHonoured = errors.New("store: conditional write not honoured")

// ProbeResult is what Probe found out about a store's server.
type ProbeResult struct {
	// Key is the scratch key it wrote.
	Key string
	// Versioning is true when the server kept the scratch key's earlier
	// version (the bucket is versioned: a task's history is kept).
	Versioning bool
}

// Probe checks, on a scratch key under ProbePrefix, that s keeps the
// promises every state change of s3q relies on: a create-if-absent
// (If-None-Match: *) of a key that exists is refused, and so is a
// compare-and-swap (If-Match) on an ETag that is not the key's, while one
// on the key's own ETag is applied. A promise not kept is an error
// wrapping ErrNotHonoured that says which; any other error is the
// request's (access denied, no such bucket, ...). It also reports whether
// the bucket keeps versions. Four PUTs, one GET-class request and a
// DELETE (which leaves a delete marker).
func Probe(ctx context.Context, s Store) (ProbeResult, error) {
	key := ProbePrefix + rand.Text()
	res := ProbeResult{Key: key}
	etag, err := s.PutIfAbsent(ctx, key, []byte("first"))
	if err != nil {
		return res, fmt.Errorf("probe: create %s: %w", key, err)
	}
	defer s.Delete(context.WithoutCancel(ctx), key)
	switch _, err := s.PutIfAbsent(ctx, key, []byte("second")); {
	case err == nil:
		return res, fmt.Errorf("probe: a create-if-absent (If-None-Match: *) of %s, which exists, replaced it: %w", key, ErrNotHonoured)
	case !errors.Is(err, ErrPrecondition):
		return res, fmt.Errorf("probe: create %s again: %w", key, err)
	}
	switch _, err := s.PutIfMatch(ctx, key, []byte("third"), `"00000000000000000000000000000000"`); {
	case err == nil:
		return res, fmt.Errorf("probe: a compare-and-swap (If-Match) of %s on an ETag that is not its own replaced it: %w", key, ErrNotHonoured)
	case !errors.Is(err, ErrPrecondition):
		return res, fmt.Errorf("probe: swap %s on another ETag: %w", key, err)
	}
	if _, err := s.PutIfMatch(ctx, key, []byte("fourth"), etag); err != nil {
		if errors.Is(err, ErrPrecondition) {
			return res, fmt.Errorf("probe: a compare-and-swap (If-Match) of %s on its own ETag was refused: %w", key, ErrNotHonoured)
		}
		return res, fmt.Errorf("probe: swap %s: %w", key, err)
	}
	page, err := s.Versions(ctx, key, "", 10)
	if err != nil {
		return res, fmt.Errorf("probe: list the versions of %s: %w", key, err)
	}
	res.Versioning = len(page.Versions) >= 2
	return res, nil
}
