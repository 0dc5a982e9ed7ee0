//go:build rie

package rietest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// fakeAWS stands in for every AWS service but S3 the functions call
// (AWS_ENDPOINT_URL points every SDK client but S3's at it), on loopback:
// EventBridge PutEvents (the sweep's Task Expired and Task Dead-Lettered
// events), Lambda Invoke (push deliveries, dispatch's wake of itself) and
// SSM GetParameter (push signing secrets). It records each call; nothing
// leaves the machine.
type fakeAWS struct {
	srv *httptest.Server

	mu      sync.Mutex
	events  []putEntry // EventBridge entries
	invokes []invoke   // Lambda invocations
	other   []string   // any other request: a failure of the test
}

type putEntry struct {
	Source       string
	DetailType   string
	Detail       string
	EventBusName string
}

type invoke struct {
	Function string
	Type     string // RequestResponse or Event
	Payload  string
}

func startFakeAWS() *fakeAWS {
	f := &fakeAWS{}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *fakeAWS) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	target := r.Header.Get("X-Amz-Target")
	switch {
	case target == "AWSEvents.PutEvents":
		var in struct{ Entries []putEntry }
		_ = json.Unmarshal(body, &in)
		f.events = append(f.events, in.Entries...)
		type result struct{ EventId string }
		out := struct {
			FailedEntryCount int
			Entries          []result
		}{}
		for range in.Entries {
			out.Entries = append(out.Entries, result{EventId: newID()})
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		_ = json.NewEncoder(w).Encode(out)
	case strings.HasPrefix(r.URL.Path, "/2015-03-31/functions/") && strings.HasSuffix(r.URL.Path, "/invocations"):
		name := strings.TrimSuffix(strings.TrimPrefix(r.URL.Path, "/2015-03-31/functions/"), "/invocations")
		typ := r.Header.Get("X-Amz-Invocation-Type")
		if typ == "" {
			typ = "RequestResponse"
		}
		f.invokes = append(f.invokes, invoke{Function: name, Type: typ, Payload: string(body)})
		if typ == "Event" {
			w.WriteHeader(http.StatusAccepted)
			return
		}
		// The push target: a handler that did the work.
		w.Header().Set("X-Amz-Executed-Version", "$LATEST")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"ok":true,"by":"rie-fake-target"}`))
	default:
		f.other = append(f.other, r.Method+" "+r.URL.Path+" "+target)
		http.Error(w, `{"message":"not served by the test's fake AWS"}`, http.StatusNotImplemented)
	}
}

func (f *fakeAWS) snapshot() ([]putEntry, []invoke, []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]putEntry(nil), f.events...), append([]invoke(nil), f.invokes...), append([]string(nil), f.other...)
}
