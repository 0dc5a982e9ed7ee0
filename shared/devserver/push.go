package devserver

import (
	"context"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
)

// newDispatcher builds the in-process dispatcher of the dev server, for
// the declared push queues (read again at most every second) and
// Options.PushQueues: URL
// targets signed with PushSecrets (http:// allowed), Lambda targets
// invoked at LambdaEndpoint.
func newDispatcher(ctx context.Context, q *queue.Queue, opts Options) (*dispatch.Dispatcher, error) {
	var lopts []func(*awsconfig.LoadOptions) error
	if opts.LambdaEndpoint != "" {
		lopts = append(lopts, awsconfig.WithRegion("us-east-1"),
			awsconfig.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("dev", "dev", "")))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, lopts...)
	if err != nil {
		return nil, err
	}
	lc := lambda.NewFromConfig(cfg, func(o *lambda.Options) {
		if opts.LambdaEndpoint != "" {
			o.BaseEndpoint = aws.String(opts.LambdaEndpoint)
		}
	})
	return dispatch.New(q, dispatch.NewDeclared(q, opts.PushQueues, time.Second), dispatch.Options{
		Logger: opts.Logger,
		Lambda: &dispatch.Lambda{Client: lc},
		HTTP:   dispatch.NewHTTP(dispatch.StaticSecrets(opts.PushSecrets), true),
	}), nil
}
