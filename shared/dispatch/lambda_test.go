package dispatch_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/s3q/s3q/shared/dispatch"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
	"github.com/s3q/s3q/shared/store"
	"github.com/s3q/s3q/shared/store/memstore"
	"github.com/s3q/s3q/shared/worker"
)

// lambdaEndpoint speaks Lambda's Invoke protocol (POST
// /2015-03-31/functions/{name}/invocations, X-Amz-Function-Error on a
// function error) and runs each function's handler as the Go runtime
// would, error payload included.
type lambdaEndpoint struct {
	srv   *httptest.Server
	mu    sync.Mutex
	calls map[string]int
}

func newLambdaEndpoint(t *testing.T, fns map[string]lambda.Handler) *lambdaEndpoint {
	le := &lambdaEndpoint{calls: map[string]int{}}
	le.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := strings.CutPrefix(r.URL.Path, "/2015-03-31/functions/")
		name, ok2 := strings.CutSuffix(name, "/invocations")
		if r.Method != http.MethodPost || !ok || !ok2 {
			http.Error(w, `{"message":"unknown route"}`, http.StatusNotFound)
			return
		}
		if r.Header.Get("X-Amz-Invocation-Type") != "" && r.Header.Get("X-Amz-Invocation-Type") != "RequestResponse" {
			t.Errorf("invocation type %q", r.Header.Get("X-Amz-Invocation-Type"))
		}
		h := fns[name]
		if h == nil {
			w.Header().Set("X-Amzn-ErrorType", "ResourceNotFoundException")
			w.WriteHeader(http.StatusNotFound)
			_, _ = io.WriteString(w, `{"Type":"User","message":"Function not found: `+name+`"}`)
			return
		}
		le.mu.Lock()
		le.calls[name]++
		le.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		out, err := h.Invoke(r.Context(), body)
		if err != nil {
			var ie messages.InvokeResponse_Error
			if !errors.As(err, &ie) {
				typ := reflect.TypeOf(err)
				if typ.Kind() == reflect.Pointer {
					typ = typ.Elem()
				}
				ie = messages.InvokeResponse_Error{Message: err.Error(), Type: typ.Name()}
			}
			out, _ = json.Marshal(ie)
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(out)
	}))
	t.Cleanup(le.srv.Close)
	return le
}

func lambdaClient(endpoint string) *awslambda.Client {
	return awslambda.New(awslambda.Options{
		Region:       "us-east-1",
		BaseEndpoint: aws.String(endpoint),
		Credentials:  credentials.NewStaticCredentialsProvider("test", "test", ""),
	})
}

func TestLambdaTargetOverTheInvokeProtocol(t *testing.T) {
	var mu sync.Mutex
	var deadlines []time.Duration
	handlers := map[string]worker.Handler{
		"ok": func(ctx context.Context, task *worker.Task) (json.RawMessage, error) {
			dl, _ := ctx.Deadline()
			mu.Lock()
			deadlines = append(deadlines, time.Until(dl))
			mu.Unlock()
			return json.RawMessage(`{"echo":` + string(task.Input) + `}`), nil
		},
		"flaky": func(context.Context, *worker.Task) (json.RawMessage, error) {
			return nil, errors.New("try again")
		},
		"broken": func(context.Context, *worker.Task) (json.RawMessage, error) {
			return nil, worker.Permanent(errors.New("never works"))
		},
	}
	le := newLambdaEndpoint(t, map[string]lambda.Handler{
		"target": lambda.NewHandler(worker.LambdaHandler(handlers)),
	})
	forEachStore(t, func(t *testing.T, st store.Store) {
		e := newEnv(st, dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "target"}, Timeout: queue.Duration(10 * time.Second)})
		ok := e.submit(t, queue.SubmitRequest{TaskType: "ok", Input: json.RawMessage(`{"n":7}`)})
		flaky := e.submit(t, queue.SubmitRequest{TaskType: "flaky"})
		broken := e.submit(t, queue.SubmitRequest{TaskType: "broken", MaxAttempts: 5})
		unknown := e.submit(t, queue.SubmitRequest{TaskType: "unknown", MaxAttempts: 5})
		d := e.dispatcher(st, &dispatch.Lambda{Client: lambdaClient(le.srv.URL)})
		if rep := run(t, d, "fn"); rep.Delivered != 4 || rep.Completed != 1 || rep.Failed != 3 || rep.Retried != 1 {
			t.Fatalf("report %+v", rep)
		}
		if got := e.get(t, ok.ID); got.Status != queue.StatusCompleted || string(got.Output) != `{"echo":{"n":7}}` {
			t.Errorf("ok: %s %s", got.Status, got.Output)
		}
		if got := e.get(t, flaky.ID); got.Status != queue.StatusPending || !strings.Contains(got.LastError, "try again") {
			t.Errorf("flaky: %s %q", got.Status, got.LastError)
		}
		if got := e.get(t, broken.ID); got.Status != queue.StatusFailed || !strings.Contains(got.LastError, "never works") {
			t.Errorf("broken: %s %q", got.Status, got.LastError)
		}
		if got := e.get(t, unknown.ID); got.Status != queue.StatusFailed {
			t.Errorf("unknown type: %s %q", got.Status, got.LastError)
		}
		mu.Lock()
		for _, dl := range deadlines {
			if dl <= 0 || dl > 10*time.Second {
				t.Errorf("handler deadline in %s, want within the 10s lease", dl)
			}
		}
		mu.Unlock()
	})
}

func TestLambdaTargetNotFoundIsARetryableFailure(t *testing.T) {
	le := newLambdaEndpoint(t, nil)
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "missing"}})
	task := e.submit(t, queue.SubmitRequest{})
	run(t, e.dispatcher(e.st, &dispatch.Lambda{Client: lambdaClient(le.srv.URL)}), "")
	if got := e.get(t, task.ID); got.Status != queue.StatusPending || !strings.Contains(got.LastError, "ResourceNotFound") {
		t.Fatalf("task %s: %q", got.Status, got.LastError)
	}
}

func TestALambdaTargetThatOutlivesTheLeaseLetsItLapse(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	le := newLambdaEndpoint(t, map[string]lambda.Handler{
		"slow": lambda.NewHandler(func() (string, error) { <-release; return "late", nil }),
	})
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "slow"}, Timeout: queue.Duration(time.Second)})
	task := e.submit(t, queue.SubmitRequest{})
	rep := run(t, e.dispatcher(e.st, &dispatch.Lambda{Client: lambdaClient(le.srv.URL)}), "")
	if rep.Lapsed != 1 {
		t.Fatalf("report %+v", rep)
	}
	if got := e.get(t, task.ID); got.Status != queue.StatusRunning || got.Attempt != 1 {
		t.Fatalf("task %s attempt %d", got.Status, got.Attempt)
	}
}

func TestLambdaWakerInvokesDispatchAsynchronouslyWithTheWake(t *testing.T) {
	var mu sync.Mutex
	var got []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		got = append(got, r.URL.Path+" "+r.Header.Get("X-Amz-Invocation-Type")+" "+string(body))
		mu.Unlock()
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	at := time.Date(2026, 1, 28, 9, 0, 5, 0, time.UTC)
	w := &dispatch.LambdaWaker{Client: lambdaClient(srv.URL), Function: "s3q-dev-dispatch"}
	w.Wake(context.Background(), dispatch.Wake{Queue: "orders"})
	w.Wake(context.Background(), dispatch.Wake{Queue: "orders", At: at})
	want := []string{
		`/2015-03-31/functions/s3q-dev-dispatch/invocations Event {"queue":"orders"}`,
		`/2015-03-31/functions/s3q-dev-dispatch/invocations Event {"queue":"orders","at":"2026-01-28T09:00:05Z"}`,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("invocations\n%q\nwant\n%q", got, want)
	}
}

func TestAThrottledLambdaTargetIsRetriedAfterLambdasRetryAfter(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Amzn-ErrorType", "TooManyRequestsException")
		w.Header().Set("Retry-After", "20")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"Type":"User","message":"Rate exceeded","retryAfterSeconds":"20","Reason":"ReservedFunctionConcurrentInvocationLimitExceeded"}`)
	}))
	defer srv.Close()
	client := awslambda.New(awslambda.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("test", "test", ""),
		RetryMaxAttempts: 1,
	})
	e := newEnv(memstore.New(), dispatch.PushQueue{Name: "fn", Target: queues.Target{Lambda: "busy"}})
	task := e.submit(t, queue.SubmitRequest{})
	before := e.clk.Now()
	run(t, e.dispatcher(e.st, &dispatch.Lambda{Client: client}), "")
	got := e.get(t, task.ID)
	if got.Status != queue.StatusPending || got.AvailableAt.Before(before.Add(20*time.Second)) || got.AvailableAt.After(e.clk.Now().Add(20*time.Second)) {
		t.Fatalf("task %s available %s (now %s): %s", got.Status, got.AvailableAt, before, got.LastError)
	}
}
