package s3store

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Config says how to reach an S3 endpoint.
type Config struct {
	// Endpoint is the base URL of an S3-compatible server, such as
	// "http://127.0.0.1:7070". Defaults to AWS S3 in Region.
	Endpoint string
	// Region is the signing region. Defaults to the SDK's default chain
	// (AWS_REGION, shared config), or to us-east-1 when Endpoint is set and
	// the chain names none.
	Region string
	// AccessKey and SecretKey are static credentials. Defaults to the SDK's
	// default credential chain (environment, shared config, IAM role) when
	// both are empty.
	AccessKey, SecretKey string
	// PathStyle addresses buckets as http://host/bucket/key instead of
	// http://bucket.host/key, as most local servers need. Defaults to false.
	PathStyle bool
}

// NewClient returns an S3 client for cfg.
//
// It asks for request and response checksums only where S3 requires them,
// which every S3-compatible server understands. Retries are set per request
// by Store, not here.
func NewClient(ctx context.Context, cfg Config) (*s3.Client, error) {
	var opts []func(*config.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, config.WithRegion(cfg.Region))
	}
	if cfg.AccessKey != "" || cfg.SecretKey != "" {
		opts = append(opts, config.WithCredentialsProvider(
			credentials.NewStaticCredentialsProvider(cfg.AccessKey, cfg.SecretKey, "")))
	}
	awsCfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("load aws config: %w", err)
	}
	if awsCfg.Region == "" && cfg.Endpoint != "" {
		awsCfg.Region = "us-east-1"
	}
	return s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		if cfg.Endpoint != "" {
			o.BaseEndpoint = aws.String(cfg.Endpoint)
		}
		o.UsePathStyle = cfg.PathStyle
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	}), nil
}
