package lambdafn

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// A failed init is posted to the runtime API's init/error with the reason,
// so the invoke that started the function answers with it.
func TestReportInitErrorPostsTheReasonToTheRuntimeAPI(t *testing.T) {
	var got struct {
		path, errType string
		body          map[string]string
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got.path, got.errType = r.URL.Path, r.Header.Get("Lambda-Runtime-Function-Error-Type")
		_ = json.Unmarshal(b, &got.body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer srv.Close()
	t.Setenv("AWS_LAMBDA_RUNTIME_API", strings.TrimPrefix(srv.URL, "http://"))
	reportInitError("submit", errors.New("config: S3Q_BUCKET is required"))
	if got.path != "/2018-06-01/runtime/init/error" || got.errType != "Runtime.InitError" ||
		got.body["errorMessage"] != "submit: config: S3Q_BUCKET is required" || got.body["errorType"] != "Runtime.InitError" {
		t.Fatalf("posted %+v", got)
	}
	// Outside Lambda: nothing to tell, and no request.
	got.path = ""
	t.Setenv("AWS_LAMBDA_RUNTIME_API", "")
	reportInitError("submit", errors.New("x"))
	if got.path != "" {
		t.Fatalf("posted outside Lambda: %+v", got)
	}
}
