package worker_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/worker"
)

// A target whose secret is unset (an empty environment variable) must not
// accept deliveries signed with the empty key: anyone can make those.
func TestVerifySignatureWithAnEmptySecretRefusesEveryDelivery(t *testing.T) {
	now := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	body := []byte(`{"task":{"id":"forged"}}`)
	ts := strconv.FormatInt(now.Unix(), 10)
	h := http.Header{}
	h.Set("S3q-Timestamp", ts)
	h.Set("S3q-Signature", pushsig.Sign("", ts, body))
	if err := worker.VerifySignature("", h, body, now, 0); !errors.Is(err, pushsig.ErrNoSecret) {
		t.Fatalf("empty secret: %v", err)
	}
}
