package api_test

import (
	"strconv"
	"testing"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/store/memstore"
)

// Every answer says how many S3 requests its call made, the figure its
// log line carries, errors included.
func TestEveryAnswerCarriesItsS3Requests(t *testing.T) {
	e := newEnv(t, memstore.New(), api.Options{})
	id := e.submit(`{"task_type":"t"}`)
	answers := []response{
		e.do("GET", "/queues/default/tasks/"+id, ""),
		e.do("GET", "/queues/default/tasks?status=pending", ""),
		e.do("GET", "/queues/default/tasks/"+unknownID, ""),
		e.do("GET", "/nope", ""),
	}
	lines := logLines(t, e.logs)[1:]
	for i, r := range answers {
		got, err := strconv.Atoi(r.header.Get(api.HeaderS3Requests))
		if err != nil {
			t.Fatalf("answer %d: %s = %q", i, api.HeaderS3Requests, r.header.Get(api.HeaderS3Requests))
		}
		if want := get(lines[i], "s3.requests").(float64); got != int(want) {
			t.Errorf("answer %d (%v): header %d, log %v", i, lines[i]["route"], got, want)
		}
	}
	if n, _ := strconv.Atoi(answers[0].header.Get(api.HeaderS3Requests)); n < 1 {
		t.Errorf("a GET of a task made no S3 request: %d", n)
	}
	if answers[3].header.Get(api.HeaderS3Requests) != "0" {
		t.Errorf("an unmatched route cost %s", answers[3].header.Get(api.HeaderS3Requests))
	}
}
