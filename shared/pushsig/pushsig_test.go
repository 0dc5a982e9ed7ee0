package pushsig_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/pushsig"
)

// The documented example (docs/push.md), computed independently with
// Python's hmac: receivers in any language can check their code against
// it.
func TestTheDocumentedSignatureExample(t *testing.T) {
	d := pushsig.Delivery{
		Timestamp: 1769590800, Method: "POST", URL: "https://hooks.example.com/s3q/orders",
		Queue: "orders", TaskID: "01943a5e-0000-7000-8000-000000000001", Attempt: 2,
	}
	body := []byte(`{"task":{}}`)
	const want = "t=1769590800,v1=54b4e83e0d8936f2f22b2101999c9a030fed8540d7b34cebce76a6dd863428d8"
	if got := pushsig.Sign("whsec-example", d, body); got != want {
		t.Fatalf("Sign = %s\nwant  %s", got, want)
	}
	h := http.Header{}
	pushsig.Headers(h, "whsec-example", d, body)
	got, err := pushsig.Verify("whsec-example", pushsig.Expect{URL: d.URL, Queue: "orders"}, "POST", h, body, time.Unix(d.Timestamp, 0).Add(time.Minute))
	if err != nil || got != d {
		t.Fatalf("Verify = %+v, %v", got, err)
	}
}
