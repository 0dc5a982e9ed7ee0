package api

import (
	"strings"

	"github.com/s3q/s3q/shared/queue"
)

// traceFromHeaders gives req the W3C trace context of the request's
// traceparent and tracestate headers where its body gives none (a
// submit, each item of a batch), then, when the API records a span of the
// request, that span's instead of the request's (spanTrace). A malformed
// header is a 400 naming it, before anything is written. Several
// tracestate headers are one list (W3C: a receiver combines them with
// commas); several traceparent headers name no one trace to continue, and
// are refused.
func traceFromHeaders(rq *request, reqs ...*queue.SubmitRequest) error {
	tps := rq.hdr.Values("traceparent")
	if len(tps) > 1 {
		return badInput("traceparent", "is given %d times; a request continues one trace", len(tps))
	}
	tp, ts := rq.hdr.Get("traceparent"), strings.Join(rq.hdr.Values("tracestate"), ",")
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
