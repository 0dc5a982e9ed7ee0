package config

import (
	"context"
	"io"
	"log/slog"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/s3store"
)

// Store returns the store the configuration describes: the bucket under
// Prefix, through the endpoint override (path-style) if any, with the AWS
// SDK's default credential chain. It makes no request.
func (c Config) Store(ctx context.Context) (store.Store, error) {
	client, err := s3store.NewClient(ctx, s3store.Config{
		Endpoint:  c.Endpoint,
		Region:    c.Region,
		PathStyle: c.Endpoint != "",
	})
	if err != nil {
		return nil, err
	}
	return s3store.New(client, c.Bucket, c.Prefix), nil
}

// Queue returns the queue over s with the configuration's shards and
// default TTL. The store is wrapped by reqcount.Wrap, so each HTTP request
// and timer run can log the S3 requests it made; Queue.Store() returns
// the wrapper.
func (c Config) Queue(s store.Store) *queue.Queue {
	return queue.New(reqcount.Wrap(s), queue.Options{Shards: c.Shards, DefaultTTL: c.DefaultTTL})
}

// Open returns the store and the queue over it.
func (c Config) Open(ctx context.Context) (store.Store, *queue.Queue, error) {
	s, err := c.Store(ctx)
	if err != nil {
		return nil, nil, err
	}
	return s, c.Queue(s), nil
}

// Logger returns a JSON logger writing to w at the configured level: one
// JSON object per line, as CloudWatch Logs Insights reads them.
func (c Config) Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}
