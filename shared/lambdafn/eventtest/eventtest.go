// Package eventtest is test support for the sample Lambda events of
// events/: it reads one with its placeholders filled in, and checks a
// function's answer to an HTTP event against the API's OpenAPI document.
// The handler tests of package lambdafn and the emulator tests of
// scripts/rietest use it alike.
package eventtest

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/api/openapitest"
	"github.com/s3q/s3q/shared/lambdafn"
)

// Read returns the sample event file of the folder dir with its
// placeholders replaced: {{task_id}} by id, {{lease_token}} by token
// (events/README.md). It fails t when the file cannot be read.
func Read(t testing.TB, dir, file, id, token string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		t.Fatal(err)
	}
	return []byte(strings.NewReplacer("{{task_id}}", id, "{{lease_token}}", token).Replace(string(b)))
}

// CheckAnswer fails t when the OpenAPI document does not describe resp as
// the answer to the HTTP event payload (see openapitest.Check). Any other
// payload (a scheduled event, a dispatch wake) is not checked, nor is an
// event the function refused before the API saw it (its own 400).
func CheckAnswer(t testing.TB, payload []byte, resp events.APIGatewayV2HTTPResponse) {
	t.Helper()
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(payload, &ev); err != nil || ev.RawPath == "" {
		return // not an HTTP event
	}
	req, err := lambdafn.RequestFromEvent(t.Context(), ev)
	if err != nil {
		return // answered by the function itself (400), never by the API
	}
	header := http.Header{}
	for k, v := range resp.Headers {
		header.Set(k, v)
	}
	var reqBody []byte
	if req.Body != nil {
		reqBody, _ = io.ReadAll(req.Body)
	}
	openapitest.Check(t, req, reqBody, resp.StatusCode, header, []byte(resp.Body))
}
