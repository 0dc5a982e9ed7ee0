package queue_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// shown are the task fields the API documents (openapi.json's Task,
// without expires_in_seconds, which the API adds). A field joins the wire
// only by being added both to wire.Task and here.
var shown = []string{
	"id", "queue", "task_type", "status", "input", "output",
	"created_at", "updated_at", "available_at",
	"expires_at", "expired_at", "expiry_reason", "ttl", "ttl_from",
	"dedup_key", "parent_id", "on_parent_expired",
	"attempt", "max_attempts", "timeout", "priority", "traceparent", "tracestate",
	"lease_expires_at", "heartbeats", "worker_id", "started_at",
	"last_error", "failed_at", "completed_at", "cancelled_at", "cancel_requested",
	"expiry_event_sent_at", "dead_letter_event_sent_at", "artifacts_expire_at", "artifact_names",
	"ended_by", "purged_at",
}

// filled is a record with every field set, by reflection, so that a field
// added to queue.Task later is set too: each string holds "secret-" and
// its Go name, which must never be seen on the wire unless shown.
func filled(t *testing.T) queue.Task {
	t.Helper()
	var rec queue.Task
	v := reflect.ValueOf(&rec).Elem()
	at := time.Date(2026, 1, 28, 9, 0, 0, 0, time.UTC)
	for i := range v.NumField() {
		f, name := v.Field(i), v.Type().Field(i).Name
		fill(t, f, name, at.Add(time.Duration(i)*time.Minute))
	}
	rec.Status = queue.StatusRunning // the enums must marshal: valid values
	rec.TTLFrom = queue.TTLFromFirstAttempt
	return rec
}

func fill(t *testing.T, f reflect.Value, name string, at time.Time) {
	switch {
	case f.Type() == reflect.TypeFor[time.Time]():
		f.Set(reflect.ValueOf(at))
	case f.Type() == reflect.TypeFor[json.RawMessage]():
		f.SetBytes([]byte(`{"k":"secret-` + name + `"}`))
	case f.Kind() == reflect.Pointer:
		f.Set(reflect.New(f.Type().Elem()))
		fill(t, f.Elem(), name, at)
	case f.Kind() == reflect.String:
		f.SetString("secret-" + name)
	case f.Kind() == reflect.Int, f.Kind() == reflect.Int64:
		f.SetInt(int64(7 * time.Second))
	case f.Kind() == reflect.Bool:
		f.SetBool(true)
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.String:
		f.Set(reflect.ValueOf([]string{"secret-" + name}).Convert(f.Type()))
	default:
		t.Fatalf("queue.Task.%s: teach fill to set a %s", name, f.Type())
	}
}

// recordKeys are the JSON names of queue.Task's fields.
func recordKeys() map[string]string {
	keys := map[string]string{}
	for f := range reflect.TypeFor[queue.Task]().Fields() {
		keys[strings.Split(f.Tag.Get("json"), ",")[0]] = f.Name
	}
	return keys
}

func TestAFieldOfTheRecordReachesTheWireOnlyWhenShown(t *testing.T) {
	rec := filled(t)
	b, err := json.Marshal(rec.Wire())
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]json.RawMessage
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	want := slices.Clone(shown)
	sort.Strings(want)
	if !slices.Equal(keys, want) {
		t.Errorf("wire keys %v\nwant %v", keys, want)
	}
	for key, name := range recordKeys() {
		if slices.Contains(shown, key) {
			continue
		}
		if bytes.Contains(b, []byte("secret-"+name+`"`)) {
			t.Errorf("the record's %s (%s) reached the wire: %s", name, key, b)
		}
	}
	for _, hidden := range []string{"lease_token", "ended_lease_token", "ended_request", "request_hash", "index_key", "slot_key", "slot_etag"} {
		if _, ok := got[hidden]; ok {
			t.Errorf("%s on the wire", hidden)
		}
	}
}

// The wire spells a task as the record spells itself, minus the fields it
// does not show: the same names, order and omissions, byte for byte.
func TestTheWireIsTheRecordsJSONWithoutItsHiddenFields(t *testing.T) {
	for _, rec := range []queue.Task{filled(t), {ID: "t1", Queue: "q", Status: queue.StatusPending}} {
		masked := rec
		v := reflect.ValueOf(&masked).Elem()
		for key, name := range recordKeys() {
			if !slices.Contains(shown, key) {
				f := v.FieldByName(name)
				f.Set(reflect.Zero(f.Type()))
			}
		}
		want, err := json.Marshal(masked)
		if err != nil {
			t.Fatal(err)
		}
		got, err := json.Marshal(rec.Wire())
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("wire  %s\nrecord %s", got, want)
		}
	}
}

// queue.SubmitRequest is wire.SubmitRequest: one declaration for the
// client, the API and the core. This stops compiling if a copy is
// declared again.
var _ queue.SubmitRequest = wire.SubmitRequest{}
