package config

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/lambda"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/s3q/s3q/shared/artifacts"
	"github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/reqcount"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/s3store"
	"github.com/s3q/s3q/shared/tasktypes"
)

// S3Client returns the S3 client the configuration describes: through the
// endpoint override (path-style) if any, with the AWS SDK's default
// credential chain. It makes no request.
func (c Config) S3Client(ctx context.Context) (*s3.Client, error) {
	return s3store.NewClient(ctx, s3store.Config{
		Endpoint:  c.Endpoint,
		Region:    c.Region,
		PathStyle: c.Endpoint != "",
	})
}

// Store returns the store the configuration describes: the bucket under
// Prefix, through S3Client. It makes no request.
func (c Config) Store(ctx context.Context) (store.Store, error) {
	client, err := c.S3Client(ctx)
	if err != nil {
		return nil, err
	}
	return s3store.New(client, c.Bucket, c.Prefix), nil
}

// Queue returns the queue over s and the registry of its declared queues
// (package queues), wired together (queues.New; the functions check the layout apart, at start): the configuration's
// shards, whether queues must be declared, the queue limit and the push
// target checks for the declarations; its default TTL and the
// per-task-type defaults of config/task_types.json in the bucket
// (tasktypes.Source, read at most every 30s) for the tasks. Every s3q
// process builds its queue here, so none skips the declarations. The
// store is wrapped by reqcount.Wrap, so each HTTP request and timer run
// can log the S3 requests it made (the declarations' and defaults' reads
// included); Queue.Store() returns the wrapper.
//
// tune, when given, changes the queue's options after the
// configuration's (a dispatcher's shorter listing cache).
func (c Config) Queue(s store.Store, tune ...func(*queue.Options)) (*queue.Queue, *queues.Registry) {
	w := reqcount.Wrap(s)
	opts := queue.Options{
		DefaultTTL:   c.DefaultTTL,
		TypeDefaults: tasktypes.NewSource(w, 0),
		// A complete answers after its one write; the marker it no longer
		// needs goes after the answer (a hint: one left behind is repaired).
		BackgroundCleanup: true,
	}
	for _, fn := range tune {
		fn(&opts)
	}
	return queues.New(w, queues.Options{
		Core:                 opts,
		Shards:               c.Shards,
		RequireDeclared:      !c.AutoDeclare,
		MaxQueues:            c.MaxQueues,
		AllowInsecureTargets: c.AllowInsecureTargets,
		CheckTarget:          c.CheckTarget,
	})
}

// Open returns the store, the queue over it and the registry of its
// declared queues (Queue).
func (c Config) Open(ctx context.Context) (store.Store, *queue.Queue, *queues.Registry, error) {
	s, err := c.Store(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	q, reg := c.Queue(s)
	return s, q, reg, nil
}

// Artifacts returns the service that hands out presigned artifact URLs
// for the tasks of q (a queue on this configuration's bucket), signed by
// client (from S3Client: the URLs then point at Endpoint when it is set),
// with URLs living ArtifactTTL before the task's deadline bounds them and
// uploads of at most MaxArtifactBytes.
func (c Config) Artifacts(q *queue.Queue, client *s3.Client) *artifacts.Service {
	return artifacts.New(q, client, c.Bucket, c.Prefix, artifacts.Options{TTL: c.ArtifactTTL, MaxBytes: c.MaxArtifactBytes})
}

// AWS returns the AWS SDK configuration for services other than S3: the
// default chain, in Region when it is set. Endpoint is not part of it: it
// redirects S3 only, never EventBridge.
func (c Config) AWS(ctx context.Context) (aws.Config, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if c.Region != "" {
		opts = append(opts, awsconfig.WithRegion(c.Region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load aws config: %w", err)
	}
	return cfg, nil
}

// Publisher returns where the sweep's Task Expired and Task Dead-Lettered
// events go: the EventBridge bus EventBus (a client made from AWS), or,
// when no bus is configured, the log (events.Log on logger). It makes no
// request.
func (c Config) Publisher(ctx context.Context, logger *slog.Logger) (queue.EventPublisher, error) {
	if c.EventBus == "" {
		return events.Log{Logger: logger}, nil
	}
	awsCfg, err := c.AWS(ctx)
	if err != nil {
		return nil, err
	}
	return events.NewEventBridgeFromConfig(awsCfg, c.EventBus, events.EventBridgeOptions{}), nil
}

// Logger returns a JSON logger writing to w at the configured level: one
// JSON object per line, as CloudWatch Logs Insights reads them.
func (c Config) Logger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: c.LogLevel}))
}

// LambdaClient returns the Lambda client of push targets and of the
// dispatch wake, on awsCfg (from AWS): through LambdaEndpoint when it is
// set. It makes no request.
func (c Config) LambdaClient(awsCfg aws.Config) *lambda.Client {
	return lambda.NewFromConfig(awsCfg, func(o *lambda.Options) {
		if c.LambdaEndpoint != "" {
			o.BaseEndpoint = aws.String(c.LambdaEndpoint)
		}
	})
}

// SSMClient returns the SSM client that reads the signing secrets of URL
// targets, on awsCfg (from AWS). It makes no request.
func (c Config) SSMClient(awsCfg aws.Config) *ssm.Client {
	return ssm.NewFromConfig(awsCfg)
}
