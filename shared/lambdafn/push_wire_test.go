package lambdafn_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/lambdafn/lambdafntest"
)

// fakeSSM answers GetParameter (the JSON protocol) for the parameters it
// holds and records whether a caller asked for decryption.
type fakeSSM struct {
	params map[string]bool

	mu        sync.Mutex
	decrypted bool
}

func (f *fakeSSM) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var in struct {
		Name           string
		WithDecryption bool
	}
	_ = json.Unmarshal(body, &in)
	f.mu.Lock()
	f.decrypted = f.decrypted || in.WithDecryption
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	if r.Header.Get("X-Amz-Target") != "AmazonSSM.GetParameter" || !f.params[in.Name] {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = io.WriteString(w, `{"__type":"ParameterNotFound","message":"no such parameter"}`)
		return
	}
	_, _ = io.WriteString(w, `{"Parameter":{"Name":"`+in.Name+`","Type":"SecureString","Value":"AQICAH-ciphertext","Version":1}}`)
}

// The deployed tasks function checks a declaration's push target against
// the stack's bindings and own functions (S3Q_PUSH_BINDINGS,
// S3Q_OWN_FUNCTIONS), and that a URL target's secret exists in SSM,
// reading its metadata only: 400 naming target or target.secret.
func TestTheTasksFunctionChecksPushTargetsAsTheStackConfiguresIt(t *testing.T) {
	ssm := &fakeSSM{params: map[string]bool{"/s3q/orders": true}}
	srv := httptest.NewServer(ssm)
	defer srv.Close()
	c := fromEnv(t, map[string]string{
		"AWS_ENDPOINT_URL_SSM": srv.URL,
		"S3Q_PUSH_BINDINGS":    `{"orders":{"lambda":["orders-fn"],"secrets":["/s3q/orders","/s3q/gone"]}}`,
		"S3Q_OWN_FUNCTIONS":    "s3q-test-dispatch,s3q-test-tasks",
	})
	d, err := lambdafn.Build(t.Context(), c, lambdafn.Parts{Out: io.Discard}, lambdafn.Tasks)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		queue, body string
		status      int
		field       string
	}{
		{"orders", `{"target":{"lambda":"orders-fn"}}`, 201, ""},
		{"orders", `{"target":{"url":"https://hooks.example.com/","secret":"/s3q/orders"}}`, 200, ""},
		{"orders", `{"target":{"lambda":"other-fn"}}`, 400, "target"},
		{"orders", `{"target":{"lambda":"s3q-test-dispatch"}}`, 400, "target"},
		{"orders", `{"target":{"url":"https://hooks.example.com/","secret":"/s3q/gone"}}`, 400, "target.secret"},
		{"billing", `{"target":{"url":"https://hooks.example.com/","secret":"/s3q/orders"}}`, 400, "target"},
	} {
		resp, body := invoke(t, lambdafn.Tasks, d, lambdafntest.APIEvent("PUT", "/queues/"+tc.queue, tc.body))
		if resp.StatusCode != tc.status {
			t.Errorf("%s %s: %d %s, want %d", tc.queue, tc.body, resp.StatusCode, resp.Body, tc.status)
			continue
		}
		if tc.field != "" {
			if e, _ := body["error"].(map[string]any); e["field"] != tc.field {
				t.Errorf("%s %s: %s, want it to name %s", tc.queue, tc.body, resp.Body, tc.field)
			}
		}
	}
	if ssm.decrypted {
		t.Error("the check asked SSM for a secret's value")
	}
}
