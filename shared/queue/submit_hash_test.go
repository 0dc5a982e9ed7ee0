package queue

import (
	"encoding/json"
	"testing"
	"time"
)

// TestRequestHashIsStable pins the request hash of a submit with every
// field set: records keep the hash of the request that made them, so a
// change of the request's JSON (a field renamed, reordered or retagged,
// or the request declared elsewhere) would make every retry of a stored
// submit a conflict. A field added later is absent from this request and
// omitted when empty, so it leaves the hash alone.
func TestRequestHashIsStable(t *testing.T) {
	at := time.Date(2026, 11, 28, 9, 30, 0, 0, time.FixedZone("x", 3600))
	ttl, delay, timeout := Duration(time.Hour), Duration(time.Minute), Duration(30*time.Second)
	secs := int64(60)
	req := SubmitRequest{
		ID: "0190f5e2-7c3a-7d1e-8f00-0123456789ab", TaskType: "report.daily", Queue: "emails",
		Input: json.RawMessage(`{ "b": 1.0, "a": [1, 2] }`),
		TTL:   &ttl, TTLSeconds: &secs, ExpiresAt: &at, TTLFrom: TTLFromFirstAttempt,
		ScheduleAt: &at, Delay: &delay, DedupKey: "k", MaxAttempts: 4, Timeout: &timeout,
		Priority: 2, Traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", Tracestate: "a=b",
		ParentID: "0190f5e2-7c3a-7d1e-8f00-0123456789ac", OnParentExpired: OnParentExpiredCancel,
	}
	const want = "32c811e1e597c926f40e1cb54c9a3efbc8f5198d443dd390cf55cf2ba96c8d26"
	if got := requestHash(req); got != want {
		t.Errorf("requestHash = %s, want %s", got, want)
	}
	// Neither the id, the trace context nor an absent queue's spelling
	// is part of the request's identity.
	same := req
	same.ID, same.Traceparent, same.Tracestate = "", "", ""
	if requestHash(same) != requestHash(req) {
		t.Error("id or trace context changed the hash")
	}
	def, named := req, req
	def.Queue, named.Queue = "", DefaultQueue
	if requestHash(def) != requestHash(named) {
		t.Error("an absent queue and the default queue hash apart")
	}
}
