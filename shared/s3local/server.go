// Package s3local runs S3-compatible servers on the loopback interface for
// tests and for local development: gofakes3 in process (StartGoFakeS3) and
// versitygw as a child process (StartVersityGW). Each comes up with one
// versioned bucket and hands out s3store.Stores on it.
//
// Package s3localtest builds on it with helpers for tests.
package s3local

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"

	"github.com/s3q/s3q/shared/store/s3store"
)

// DefaultBucket is the bucket a server creates unless told otherwise.
const DefaultBucket = "s3q"

// Server is a running local S3 server with one versioned bucket.
type Server struct {
	// Name says which server this is ("gofakes3" or "versitygw").
	Name string
	// Endpoint is the server's base URL, such as "http://127.0.0.1:7070".
	Endpoint string
	// Region is the region requests are signed for.
	Region string
	// AccessKey and SecretKey are the credentials the server accepts.
	AccessKey, SecretKey string
	// Bucket is the versioned bucket the server was started with.
	Bucket string

	client *s3.Client
	stop   func() error
}

// Client returns an S3 client for the server (path-style, static
// credentials). It is shared and safe for concurrent use.
func (s *Server) Client() *s3.Client { return s.client }

// Config returns what s3store.NewClient needs to reach the server.
func (s *Server) Config() s3store.Config {
	return s3store.Config{
		Endpoint:  s.Endpoint,
		Region:    s.Region,
		AccessKey: s.AccessKey,
		SecretKey: s.SecretKey,
		PathStyle: true,
	}
}

// Store returns a store on the server's bucket whose keys all live under
// prefix.
func (s *Server) Store(prefix string) *s3store.Store {
	return s3store.New(s.client, s.Bucket, prefix)
}

// StoreInBucket returns a store on a bucket of its own, bucket, made
// (with versioning on) if it does not exist, whose keys all live under
// prefix.
func (s *Server) StoreInBucket(ctx context.Context, bucket, prefix string) (*s3store.Store, error) {
	if err := createVersionedBucket(ctx, s.client, bucket); err != nil {
		return nil, fmt.Errorf("%s: bucket %s: %w", s.Name, bucket, err)
	}
	return s3store.New(s.client, bucket, prefix), nil
}

// Close stops the server and removes whatever it stored. It is safe to call
// more than once.
func (s *Server) Close() error {
	if s.stop == nil {
		return nil
	}
	stop := s.stop
	s.stop = nil
	return stop()
}

// Connect returns a Server for an S3 endpoint that is already running
// (the user's own, say), named name, and makes sure its bucket exists with
// versioning on (creating it, turning versioning on). Close does not stop
// the endpoint.
func Connect(ctx context.Context, name, endpoint, region, accessKey, secretKey, bucket string) (*Server, error) {
	if region == "" {
		region = "us-east-1"
	}
	s := &Server{Name: name, Endpoint: endpoint, Region: region, AccessKey: accessKey, SecretKey: secretKey, Bucket: bucket}
	if err := s.connect(ctx); err != nil {
		return nil, fmt.Errorf("%s at %s: %w", name, endpoint, err)
	}
	return s, nil
}

// connect builds the server's client and creates its bucket with
// versioning enabled.
func (s *Server) connect(ctx context.Context) error {
	client, err := s3store.NewClient(ctx, s.Config())
	if err != nil {
		return err
	}
	s.client = client
	return createVersionedBucket(ctx, client, s.Bucket)
}

// createVersionedBucket creates bucket (or accepts that it exists) and turns
// versioning on, then checks that the server says it is on.
func createVersionedBucket(ctx context.Context, client *s3.Client, bucket string) error {
	_, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &bucket})
	var owned *types.BucketAlreadyOwnedByYou
	var exists *types.BucketAlreadyExists // gofakes3, some servers: then versioning says whose it is
	if err != nil && !errors.As(err, &owned) && !errors.As(err, &exists) {
		return fmt.Errorf("create bucket %s: %w", bucket, err)
	}
	_, err = client.PutBucketVersioning(ctx, &s3.PutBucketVersioningInput{
		Bucket: &bucket,
		VersioningConfiguration: &types.VersioningConfiguration{
			Status: types.BucketVersioningStatusEnabled,
		},
	})
	if err != nil {
		return fmt.Errorf("enable versioning on %s: %w", bucket, err)
	}
	out, err := client.GetBucketVersioning(ctx, &s3.GetBucketVersioningInput{Bucket: aws.String(bucket)})
	if err != nil {
		return fmt.Errorf("get versioning of %s: %w", bucket, err)
	}
	if out.Status != types.BucketVersioningStatusEnabled {
		return fmt.Errorf("enable versioning on %s: status is %q", bucket, out.Status)
	}
	return nil
}
