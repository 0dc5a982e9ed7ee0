// Package artifacts hands out presigned S3 URLs for a task's artifacts,
// artifacts/{task_id}/{name} in the bucket: a PUT
// URL to upload one, a GET URL to read it. A URL expires at min(now +
// artifact_ttl, task.expires_at); the sweep deletes a task's artifacts
// once past that time or once the task has finished (see
// queue.Queue.ReserveArtifact), and an S3 lifecycle rule is the backstop.
//
// The URLs carry the rights of the credentials that sign them (the API
// function's role), for that one key and method, until they expire. An
// upload declares its size, at most Options.MaxBytes, and its URL is
// signed with that Content-Length, so S3 refuses a body of any other
// size. A download URL asks S3 to answer with Content-Disposition:
// attachment, so a browser saves the artifact rather than rendering it.
package artifacts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/store"
)

// DefaultTTL is the artifact_ttl when none is configured.
const DefaultTTL = time.Hour

// DefaultMaxBytes is the largest artifact an upload URL accepts when
// none is configured: 100 MiB.
const DefaultMaxBytes = 100 << 20

// MaxPutBytes is the most one S3 PUT can carry (5 GiB), and so the
// highest MaxBytes.
const MaxPutBytes = 5 << 30

// MaxURLLifetime is the longest a SigV4 presigned URL may live (7 days);
// longer artifact lifetimes give URLs that expire sooner.
const MaxURLLifetime = 7 * 24 * time.Hour

// ErrNoArtifact means the task has no artifact of that name (never
// uploaded, deleted, or past its time). It wraps queue.ErrNotFound.
var ErrNoArtifact = fmt.Errorf("artifacts: no such artifact: %w", queue.ErrNotFound)

// Options tune a Service.
type Options struct {
	// TTL is artifact_ttl: how long after it is issued a URL may live,
	// before the task's deadline bounds it. Defaults to DefaultTTL.
	TTL time.Duration
	// MaxBytes is the largest size an upload may declare. Defaults to
	// DefaultMaxBytes; at most MaxPutBytes.
	MaxBytes int64
}

// Service issues presigned artifact URLs for the tasks of one queue.
type Service struct {
	q       *queue.Queue
	presign *s3.PresignClient
	signer  *v4.Signer
	bucket  string
	prefix  string
	ttl     time.Duration
	max     int64
}

// New returns a Service for the tasks of q, signing with client (made by
// s3store.NewClient, which asks for checksums only where S3 requires them,
// so that a presigned PUT carries none) for bucket. keyPrefix is the
// prefix q's store puts before every key ("" on a bucket of its own).
func New(q *queue.Queue, client *s3.Client, bucket, keyPrefix string, opts Options) *Service {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxBytes <= 0 || opts.MaxBytes > MaxPutBytes {
		opts.MaxBytes = DefaultMaxBytes
	}
	return &Service{
		q:       q,
		presign: s3.NewPresignClient(client),
		// S3 keys are escaped once: the presigner S3 itself uses does so.
		signer: v4.NewSigner(func(o *v4.SignerOptions) { o.DisableURIPathEscaping = true }),
		bucket: bucket, prefix: keyPrefix, ttl: opts.TTL, max: opts.MaxBytes,
	}
}

// URL is a presigned request for one artifact.
type URL struct {
	TaskID string `json:"task_id"`
	Name   string `json:"name"`
	// Method is PUT (upload) or GET (download).
	Method string `json:"method"`
	URL    string `json:"url"`
	// Headers are headers the request must carry as signed, if any.
	Headers http.Header `json:"headers,omitempty"`
	// ExpiresAt is when the URL stops working.
	ExpiresAt time.Time `json:"expires_at"`
}

// PutURL returns a URL to upload the artifact name of a task at now, for
// a body of exactly size bytes: the URL signs Content-Length, so S3
// refuses any other size (403). The task must not be finished and its
// deadline must not have passed (a *queue.StateError); a bad name, or a
// size below 1, is a *queue.ValidationError, a size over MaxBytes, or a
// new name past queue.MaxArtifacts, one that wraps queue.ErrTooLarge.
// Nothing is written for a bad request.
//
// taskID is an id in the view s's Queue is of (queue.Queue.In), or a
// reference {queue}/{id}.
func (s *Service) PutURL(ctx context.Context, taskID, name string, size int64, now time.Time) (URL, error) {
	now = now.UTC().Truncate(time.Microsecond)
	if err := queue.ValidateArtifactName(name); err != nil {
		return URL{}, err
	}
	switch {
	case size < 1:
		return URL{}, &queue.ValidationError{Field: "size", Err: queue.ErrInvalidInput,
			Message: fmt.Sprintf("is required: the artifact's size in bytes, from 1 to %d", s.max)}
	case size > s.max:
		return URL{}, &queue.ValidationError{Field: "size", Err: queue.ErrTooLarge,
			Message: fmt.Sprintf("%d bytes is more than the %d an artifact may have", size, s.max)}
	}
	task, until, err := s.q.ReserveArtifact(ctx, queue.ArtifactRequest{ID: taskID, Name: name, TTL: s.ttl}, now)
	if err != nil {
		return URL{}, err
	}
	taskID = task.ID
	key := s.prefix + queue.ArtifactKey(task.Queue, task.ID, name)
	until = clampURL(until, now)
	req, err := s.presign.PresignPutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key), ContentLength: aws.Int64(size)},
		s3.WithPresignExpires(until.Sub(now)), s.at(now))
	if err != nil {
		return URL{}, fmt.Errorf("presign put %s: %w", key, err)
	}
	return URL{TaskID: taskID, Name: name, Method: req.Method, URL: req.URL, Headers: signed(req.SignedHeader), ExpiresAt: until}, nil
}

// GetURL returns a URL to download the artifact name of a task at now,
// or ErrNoArtifact when there is none to read (one HEAD checks). The URL
// carries response-content-disposition=attachment (with the file name).
func (s *Service) GetURL(ctx context.Context, taskID, name string, now time.Time) (URL, error) {
	now = now.UTC().Truncate(time.Microsecond)
	if err := queue.ValidateArtifactName(name); err != nil {
		return URL{}, err
	}
	task, err := s.q.Get(ctx, taskID)
	if err != nil {
		return URL{}, err
	}
	taskID = task.ID
	until, ok := task.ArtifactReadExpiry(s.ttl, now)
	if !ok {
		return URL{}, fmt.Errorf("artifact %s of task %s: %w", name, taskID, ErrNoArtifact)
	}
	if _, err := s.q.Store().Head(ctx, queue.ArtifactKey(task.Queue, task.ID, name)); errors.Is(err, store.ErrNotFound) {
		return URL{}, fmt.Errorf("artifact %s of task %s: %w", name, taskID, ErrNoArtifact)
	} else if err != nil {
		return URL{}, fmt.Errorf("head artifact %s of task %s: %w", name, taskID, err)
	}
	key := s.prefix + queue.ArtifactKey(task.Queue, task.ID, name)
	until = clampURL(until, now)
	in := &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key),
		ResponseContentDisposition: aws.String(`attachment; filename="` + name + `"`)} // name: [A-Za-z0-9._-] only
	req, err := s.presign.PresignGetObject(ctx, in,
		s3.WithPresignExpires(until.Sub(now)), s.at(now))
	if err != nil {
		return URL{}, fmt.Errorf("presign get %s: %w", key, err)
	}
	return URL{TaskID: taskID, Name: name, Method: req.Method, URL: req.URL, Headers: signed(req.SignedHeader), ExpiresAt: until}, nil
}

// clampURL bounds a URL's expiry to what SigV4 allows, in whole seconds
// (X-Amz-Expires is a number of seconds; rounding down never outlives the
// artifact).
func clampURL(until, now time.Time) time.Time {
	if until.Sub(now) > MaxURLLifetime {
		until = now.Add(MaxURLLifetime)
	}
	return now.Add(until.Sub(now).Truncate(time.Second))
}

// at signs with now as the signing time, so that the URL's life is the
// one computed from the core's clock.
func (s *Service) at(now time.Time) func(*s3.PresignOptions) {
	return func(o *s3.PresignOptions) { o.Presigner = fixedTime{s.signer, now} }
}

type fixedTime struct {
	signer *v4.Signer
	now    time.Time
}

func (f fixedTime) PresignHTTP(ctx context.Context, creds aws.Credentials, r *http.Request, payloadHash, service, region string, _ time.Time, optFns ...func(*v4.SignerOptions)) (string, http.Header, error) {
	return f.signer.PresignHTTP(ctx, creds, r, payloadHash, service, region, f.now, optFns...)
}

// signed drops the Host header, which every HTTP client sends by itself.
func signed(h http.Header) http.Header {
	out := http.Header{}
	for k, v := range h {
		if http.CanonicalHeaderKey(k) != "Host" {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
