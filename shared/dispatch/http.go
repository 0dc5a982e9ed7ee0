package dispatch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/queues"
)

// maxAnswerBytes is the most of a target's answer that is read: the
// core's output limit; a longer answer fails the task.
const maxAnswerBytes = queue.MaxInputBytes

// maxRetryAfter caps a target's Retry-After: a later one waits 12 hours.
const maxRetryAfter = 12 * time.Hour

// HTTP delivers to URL targets: a POST of the payload, signed (package
// pushsig) with the secret named by the target, the signature binding the
// target URL, the queue, the task id and the attempt. 2xx completes with
// the body as output. 429 and 5xx are a retryable failure, available
// again after Retry-After (seconds or an HTTP date, at most 12 hours) when
// given, else after the queue's backoff; a time-out lets the lease lapse
// (the next attempt follows it); a connection error, or an answer whose
// body is cut off, is a retryable failure. Any other status (3xx:
// redirects are not followed; other 4xx) fails the task without retry. A
// task whose expires_at passes while the signing key is read is not sent
// (HandBack).
type HTTP struct {
	// Client sends the requests; NewHTTP's refuses local addresses (see
	// NewHTTP). A nil one is http.DefaultClient, which does not. Redirects
	// are never followed: the client's CheckRedirect is replaced.
	Client *http.Client
	// Secrets reads the signing keys. Required.
	Secrets SecretSource
	// AllowHTTP admits http:// URLs (s3q dev). Defaults to false.
	AllowHTTP bool
}

var _ Deliverer = (*HTTP)(nil)

// NewHTTP returns an HTTP deliverer. Unless allowHTTP (s3q dev), its
// client refuses to connect to an address that is loopback, link-local
// (169.254.0.0/16 and fe80::/10: the instance metadata and container
// credential endpoints), AWS's IPv6 metadata address (fd00:ec2::254),
// multicast or unspecified, or that embeds such an IPv4 address in one of
// the IPv6 forms that reach it (IPv4-mapped ::ffff:0:0/96, NAT64
// 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16), checked on the
// address dialled, after DNS, and uses no proxy. Private addresses (10/8, 172.16/12, 192.168/16) are
// allowed: a dispatcher in a VPC may deliver to its services.
func NewHTTP(secrets SecretSource, allowHTTP bool) *HTTP {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	// Deliveries of a queue run up to 64 at once (more with a higher
	// max_concurrency) to one host: keep their connections (a new TLS
	// connection is two more round trips), not http's default of 2.
	tr.MaxIdleConnsPerHost = 2 * DefaultMaxInFlight
	if !allowHTTP {
		tr.Proxy = nil
		tr.DialContext = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second, Control: refuseLocal}).DialContext
	}
	return &HTTP{Client: &http.Client{Transport: tr}, Secrets: secrets, AllowHTTP: allowHTTP}
}

// ErrRefusedAddress is the cause of a delivery whose target resolved to an
// address NewHTTP's client refuses.
var ErrRefusedAddress = errors.New("dispatch: target address refused (loopback, link-local or metadata)")

// awsMetadataV6 is the instance metadata service's IPv6 address.
var awsMetadataV6 = netip.MustParseAddr("fd00:ec2::254")

// refuseLocal is a net.Dialer Control: it refuses the addresses NewHTTP
// names.
func refuseLocal(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, address)
	}
	if ip := ap.Addr().Unmap(); refusedAddr(ip) {
		return fmt.Errorf("%w: %s", ErrRefusedAddress, ip)
	}
	return nil
}

// Deliver posts one delivery.
func (h *HTTP) Deliver(ctx context.Context, target queues.Target, d Delivery) Result {
	if err := queues.ValidateTarget(target, h.AllowHTTP); err != nil {
		return Result{Outcome: Fail, Error: err.Error()}
	}
	start := time.Now()
	secret, err := h.Secrets.Secret(ctx, target.Secret, d.Now)
	if err != nil {
		return Result{Outcome: Fail, Error: "read the signing secret: " + err.Error(), Retryable: true}
	}
	if t := d.Task.ExpiresAt; t != nil && !d.Now.Add(time.Since(start)).Before(*t) {
		return Result{Outcome: HandBack} // the deadline passed while the key was read
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target.URL, bytes.NewReader(d.Body))
	if err != nil {
		return Result{Outcome: Fail, Error: err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "s3q-dispatch")
	if tp := d.Task.Traceparent; tp != "" && queue.ValidateTraceparent("traceparent", tp) == nil &&
		queue.ValidateTracestate("tracestate", d.Task.Tracestate, tp) == nil {
		// The trace context the task was submitted in (W3C Trace Context),
		// when it is one: a record written before submits checked a later
		// version's fields could hold what no header may.
		req.Header.Set("traceparent", tp)
		if d.Task.Tracestate != "" {
			req.Header.Set("tracestate", d.Task.Tracestate)
		}
	}
	pushsig.Headers(req.Header, secret, pushsig.Delivery{
		Timestamp: d.Now.Unix(), Method: http.MethodPost, URL: target.URL,
		Queue: d.Task.Queue, TaskID: d.Task.ID, Attempt: d.Task.Attempt,
	}, d.Body)
	c := *h.client()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := c.Do(req)
	if errors.Is(err, ErrRefusedAddress) {
		return Result{Outcome: Fail, Error: "post: " + err.Error()}
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			return Result{Outcome: Lapse}
		}
		var uerr *url.Error
		if errors.As(err, &uerr) && uerr.Timeout() {
			return Result{Outcome: Lapse}
		}
		return Result{Outcome: Fail, Error: "post: " + err.Error(), Retryable: true}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil && ctx.Err() != nil {
		return Result{Outcome: Lapse, Status: resp.StatusCode}
	}
	if err != nil {
		// The answer was cut off: half a body is no output.
		return Result{Outcome: Fail, Error: fmt.Sprintf("read the answer (%d): %v", resp.StatusCode, err), Retryable: true, Status: resp.StatusCode}
	}
	return decideHTTP(resp.StatusCode, resp.Header.Get("Retry-After"), body, d.Now)
}

// decideHTTP maps an HTTP answer to a Result (see HTTP).
func decideHTTP(status int, retryAfter string, body []byte, now time.Time) Result {
	switch {
	case status >= 200 && status < 300:
		return Result{Outcome: Complete, Output: body, Status: status}
	case status == http.StatusTooManyRequests || status >= 500:
		return Result{Outcome: Fail, Status: status, Retryable: true,
			Error:      fmt.Sprintf("target answered %d: %s", status, snippet(body)),
			RetryAfter: parseRetryAfter(retryAfter, now)}
	default:
		return Result{Outcome: Fail, Status: status,
			Error: fmt.Sprintf("target answered %d: %s", status, snippet(body))}
	}
}

// parseRetryAfter reads a Retry-After header (delay-seconds or an HTTP
// date) at now, capped at maxRetryAfter; 0 when absent or unreadable.
func parseRetryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	var d time.Duration
	n, err := strconv.ParseInt(v, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		err = nil // a number of seconds beyond int64: the cap, or nothing when negative
	}
	if err == nil {
		if n <= 0 {
			return 0
		}
		d = time.Duration(min(n, int64(maxRetryAfter/time.Second))) * time.Second
	} else if t, err := http.ParseTime(v); err == nil {
		d = t.Sub(now)
	}
	if d <= 0 {
		return 0
	}
	return min(d, maxRetryAfter)
}

func (h *HTTP) client() *http.Client {
	if h.Client != nil {
		return h.Client
	}
	return http.DefaultClient
}

func snippet(b []byte) string {
	const max = 512
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
