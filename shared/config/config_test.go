package config_test

import (
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/config"
	"github.com/s3q/s3q/shared/deploy"
)

func env(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestFromEnv(t *testing.T) {
	t.Run("a_full_environment_is_read", func(t *testing.T) {
		c, err := config.FromEnv(env(map[string]string{
			"S3Q_BUCKET": "my-bucket", "S3Q_PREFIX": "dev/", "S3Q_ENDPOINT": "http://127.0.0.1:7070",
			"AWS_REGION": "eu-west-1", "S3Q_DEFAULT_TTL": "7d", "S3Q_SHARDS": "4", "S3Q_LOG_LEVEL": "debug",
			"S3Q_EVENT_BUS": "s3q-dev", "S3Q_ARTIFACT_TTL": "30m", "S3Q_METRICS_NAMESPACE": "s3q/dev",
			"S3Q_MAX_WAIT":           "10s",
			"S3Q_MAX_ARTIFACT_BYTES": "1048576",
			"S3Q_AUTO_DECLARE":       "true", "S3Q_MAX_QUEUES": "50", "S3Q_ALLOW_INSECURE_TARGETS": "1",
			"S3Q_PUSH_BINDINGS": `{"orders":{"lambda":["orders-fn"],"secrets":["/s3q/hook"]}}`,
			"S3Q_OWN_FUNCTIONS": "s3q-dev-submit,s3q-dev-tasks", "AWS_LAMBDA_FUNCTION_NAME": "s3q-dev-tasks",
			"S3Q_PUSH_CONCURRENCY":  "32",
			"S3Q_DISPATCH_FUNCTION": "s3q-dev-dispatch", "S3Q_LAMBDA_ENDPOINT": "http://127.0.0.1:9001",
		}))
		if err != nil {
			t.Fatal(err)
		}
		want := config.Config{Bucket: "my-bucket", Prefix: "dev/", Endpoint: "http://127.0.0.1:7070", Region: "eu-west-1",
			DefaultTTL: 7 * 24 * time.Hour, Shards: 4, LogLevel: slog.LevelDebug, EventBus: "s3q-dev", ArtifactTTL: 30 * time.Minute, MetricsNamespace: "s3q/dev",
			MaxWait:          10 * time.Second,
			MaxArtifactBytes: 1 << 20,
			AutoDeclare:      true, MaxQueues: 50, AllowInsecureTargets: true,

			PushBindings:        deploy.Bindings{"orders": {Lambda: []string{"orders-fn"}, Secrets: []string{"/s3q/hook"}}},
			OwnFunctions:        []string{"s3q-dev-submit", "s3q-dev-tasks", "s3q-dev-dispatch"},
			DispatchMaxInFlight: 32,
			DispatchFunction:    "s3q-dev-dispatch", LambdaEndpoint: "http://127.0.0.1:9001"}
		if !reflect.DeepEqual(c, want) {
			t.Errorf("got %+v\nwant %+v", c, want)
		}
	})
	t.Run("only_the_bucket_is_required", func(t *testing.T) {
		c, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": "b12"}))
		if err != nil || c.Shards != 1 || c.LogLevel != slog.LevelInfo || c.DefaultTTL != 0 || c.EventBus != "" || c.ArtifactTTL != time.Hour || c.MetricsNamespace != "s3q" || c.MaxWait != 25*time.Second ||
			c.MaxArtifactBytes != 100<<20 || c.AutoDeclare || c.MaxQueues != 0 || c.AllowInsecureTargets {
			t.Errorf("got %+v, %v", c, err)
		}
	})
	t.Run("every_problem_is_reported_at_once_naming_its_variable", func(t *testing.T) {
		_, err := config.FromEnv(env(map[string]string{
			"S3Q_PREFIX": "dev", "S3Q_ENDPOINT": "localhost:7070", "S3Q_DEFAULT_TTL": "soon",
			"S3Q_SHARDS": "0", "S3Q_LOG_LEVEL": "loud", "S3Q_ARTIFACT_TTL": "0", "S3Q_METRICS_NAMESPACE": "AWS/Lambda", "S3Q_MAX_WAIT": "1h",
			"S3Q_MAX_ARTIFACT_BYTES": "100MiB",
			"S3Q_AUTO_DECLARE":       "yes please", "S3Q_MAX_QUEUES": "0", "S3Q_ALLOW_INSECURE_TARGETS": "sure",
			"S3Q_PUSH_QUEUES": `{"q":{"target":{"url":"https://example.com/plain","secret":"s"}}}`, "S3Q_LAMBDA_ENDPOINT": "nowhere",
			"S3Q_PUSH_BINDINGS": `{"q":{"lambda":["not a function"]}}`, "S3Q_PUSH_CONCURRENCY": "0",
		}))
		if err == nil {
			t.Fatal("no error")
		}
		for _, v := range []string{"S3Q_BUCKET is required", "S3Q_PREFIX", "S3Q_ENDPOINT", "S3Q_DEFAULT_TTL", "S3Q_SHARDS", "S3Q_LOG_LEVEL", "S3Q_ARTIFACT_TTL", "S3Q_METRICS_NAMESPACE", "S3Q_MAX_WAIT", "S3Q_MAX_ARTIFACT_BYTES",
			"S3Q_AUTO_DECLARE", "S3Q_MAX_QUEUES", "S3Q_ALLOW_INSECURE_TARGETS", "S3Q_PUSH_QUEUES is no longer read", "S3Q_PUSH_BINDINGS", "target.lambda", "S3Q_PUSH_CONCURRENCY", "S3Q_LAMBDA_ENDPOINT"} {
			if !strings.Contains(err.Error(), v) {
				t.Errorf("the error does not mention %s: %v", v, err)
			}
		}
		var fe *config.FieldError
		if !errors.As(err, &fe) {
			t.Errorf("no *FieldError in %v", err)
		}
	})
	t.Run("a_bad_bucket_name_is_refused", func(t *testing.T) {
		for _, b := range []string{"ab", "My_Bucket", "-lead", "a/b"} {
			if _, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": b})); err == nil {
				t.Errorf("bucket %q accepted", b)
			}
		}
	})
	t.Run("max_wait_is_more_than_0_and_at_most_15m", func(t *testing.T) {
		for _, w := range []string{"0", "-1s", "16m", "soon"} {
			if _, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": "bkt", "S3Q_MAX_WAIT": w})); err == nil || !strings.Contains(err.Error(), "S3Q_MAX_WAIT") {
				t.Errorf("S3Q_MAX_WAIT=%s: %v", w, err)
			}
		}
	})
	t.Run("waits_per_queue_is_0_to_1000", func(t *testing.T) {
		for _, w := range []string{"-1", "1001", "five"} {
			if _, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": "bkt", "S3Q_WAITS_PER_QUEUE": w})); err == nil || !strings.Contains(err.Error(), "S3Q_WAITS_PER_QUEUE") {
				t.Errorf("S3Q_WAITS_PER_QUEUE=%s: %v", w, err)
			}
		}
		c, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": "bkt", "S3Q_WAITS_PER_QUEUE": "5"}))
		if err != nil || c.WaitsPerQueue != 5 {
			t.Errorf("S3Q_WAITS_PER_QUEUE=5: %d %v", c.WaitsPerQueue, err)
		}
	})
	t.Run("a_negative_default_ttl_is_refused", func(t *testing.T) {
		if _, err := config.FromEnv(env(map[string]string{"S3Q_BUCKET": "bkt", "S3Q_DEFAULT_TTL": "-1h"})); err == nil {
			t.Error("accepted")
		}
	})
}
