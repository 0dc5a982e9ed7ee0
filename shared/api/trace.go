package api

import "github.com/s3q/s3q/shared/queue"

// traceFromHeaders gives req the W3C trace context of the request's
// traceparent and tracestate headers where its body gives none (a
// submit, each item of a batch). A malformed header is a 400 naming it,
// before anything is written.
func traceFromHeaders(rq *request, reqs ...*queue.SubmitRequest) error {
	tp, ts := rq.hdr.Get("traceparent"), rq.hdr.Get("tracestate")
	if tp == "" && ts == "" {
		return nil
	}
	if tp != "" {
		if err := queue.ValidateTraceparent("traceparent", tp); err != nil {
			return err
		}
	}
	if err := queue.ValidateTracestate("tracestate", ts, tp); err != nil {
		return err
	}
	for _, req := range reqs {
		if req.Traceparent == "" {
			req.Traceparent, req.Tracestate = tp, ts
		}
	}
	return nil
}
