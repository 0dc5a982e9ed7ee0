package devserver

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/s3store"
)

// devStore is where the dev server keeps its state.
type devStore struct {
	store    store.Store
	client   *s3.Client   // the store's client, which signs presigned artifact URLs
	describe string       // for the banner
	close    func() error // stops a server Run started
}

// openStore returns the store the options name: a real endpoint, a
// gofakes3 server persisting to DataDir, or an in-memory gofakes3 server.
func openStore(ctx context.Context, opts Options) (*devStore, error) {
	if opts.Prefix != "" && !strings.HasSuffix(opts.Prefix, "/") {
		return nil, fmt.Errorf("devserver: prefix %q must end in \"/\"", opts.Prefix)
	}
	switch {
	case opts.Endpoint != "" && opts.DataDir != "":
		return nil, fmt.Errorf("devserver: give an endpoint or a data directory, not both")
	case opts.Endpoint != "":
		return openEndpoint(ctx, opts)
	case opts.DataDir != "":
		if err := os.MkdirAll(opts.DataDir, 0o755); err != nil {
			return nil, fmt.Errorf("devserver: data directory: %w", err)
		}
		path := filepath.Join(opts.DataDir, "s3q.bolt")
		srv, err := startBoltS3(path, opts.Bucket)
		if err != nil {
			return nil, err
		}
		return &devStore{
			store:    srv.Store(opts.Prefix),
			client:   srv.client,
			describe: fmt.Sprintf("bucket %s in gofakes3 at %s, persisted to %s (current versions only)", opts.Bucket, srv.Endpoint, path),
			close:    srv.Close,
		}, nil
	default:
		srv, err := s3local.StartGoFakeS3(s3local.GoFakeS3Options{Bucket: opts.Bucket})
		if err != nil {
			return nil, fmt.Errorf("devserver: %w", err)
		}
		return &devStore{
			store:    srv.Store(opts.Prefix),
			client:   srv.Client(),
			describe: fmt.Sprintf("bucket %s in gofakes3 at %s, in memory (lost on exit; --data-dir keeps it)", opts.Bucket, srv.Endpoint),
			close:    srv.Close,
		}, nil
	}
}

// openEndpoint uses a real S3 endpoint, checking first that the bucket
// answers (one HEAD of its layout version object), so that a wrong endpoint, bucket or credential fails
// at start with a clear message rather than on the first request.
func openEndpoint(ctx context.Context, opts Options) (*devStore, error) {
	client, err := s3store.NewClient(ctx, s3store.Config{
		Endpoint: opts.Endpoint, Region: opts.Region,
		AccessKey: opts.AccessKey, SecretKey: opts.SecretKey, PathStyle: true,
	})
	if err != nil {
		return nil, fmt.Errorf("devserver: %w", err)
	}
	s := s3store.New(client, opts.Bucket, opts.Prefix)
	if _, err := s.Head(ctx, queue.LayoutKey); err != nil && !errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("devserver: bucket %s at %s does not answer: %w", opts.Bucket, opts.Endpoint, err)
	}
	// The server must keep the promises every state change relies on;
	// a proxy that drops the conditions would lose and duplicate tasks.
	describe := fmt.Sprintf("bucket %s at %s", opts.Bucket, opts.Endpoint)
	switch res, err := store.Probe(ctx, s); {
	case err != nil:
		return nil, fmt.Errorf("devserver: bucket %s at %s: %w (s3q needs a server that honours If-None-Match and If-Match on PUT; s3q check probes a bucket)", opts.Bucket, opts.Endpoint, err)
	case !res.Versioning:
		describe += "; WARNING: the bucket keeps no versions, so a task's history has only its last version"
	}
	return &devStore{
		store:    s,
		client:   client,
		describe: describe,
		close:    func() error { return nil },
	}, nil
}
