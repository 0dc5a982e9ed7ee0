package api

import "github.com/s3q/s3q/shared/queue"

// traceFromHeaders gives req the W3C trace context of the request's
// traceparent and tracestate headers where its body gives none (a
// submit, each item of a batch), then, when the API records a span of the
// request, that span's instead of the request's (spanTrace). A malformed
// header is a 400 naming it, before anything is written.
func traceFromHeaders(rq *request, reqs ...*queue.SubmitRequest) error {
	tp, ts := rq.hdr.Get("traceparent"), rq.hdr.Get("tracestate")
	if tp != "" {
		if err := queue.ValidateTraceparent("traceparent", tp); err != nil {
			return err
		}
	}
	if err := queue.ValidateTracestate("tracestate", ts, tp); err != nil {
		return err
	}
	if tp != "" {
		for _, req := range reqs {
			if req.Traceparent == "" {
				req.Traceparent, req.Tracestate = tp, ts
			}
		}
	}
	spanTrace(rq.ctx, tp, reqs)
	return nil
}
