// Package faultproxy is a fault-injecting HTTP proxy for S3, for tests and
// benchmarks only: it listens on 127.0.0.1, forwards every request to an
// S3-compatible server (versitygw, gofakes3) unchanged, and on the way
// answers some with an S3 fault instead.
//
// Faults, each drawn at a set rate from a seeded RNG (Rates) or fired once
// on a chosen request (Proxy.Inject):
//
//   - SlowDown: 503 with an S3 XML error body, code SlowDown; the request
//     is not forwarded (throttling refuses a request before it runs);
//   - InternalError: 500 with code InternalError, not forwarded;
//   - Reset: the client's connection is reset, nothing forwarded;
//   - Latency: the request is forwarded after a random delay below
//     Rates.LatencyMax;
//   - LostAnswer: the request is forwarded and lands, then the client's
//     connection is reset without an answer: the write happened and the
//     client cannot know.
//
// A latency profile (Options.Latency: NoLatency, Typical) adds a delay to
// every request, drawn from its own seeded RNG, so that a loopback server
// answers like S3 tens of milliseconds away and a benchmark can count the
// round trips an operation makes one after another; Slow puts the same
// profile under a store without a proxy (the mem store in tests).
//
// Requests are forwarded byte for byte with the Host header the client
// sent: a client signs its SigV4 requests for the proxy's address (it is
// configured with Proxy.URL as its endpoint), and the server checks the
// signature against that same Host. The draws come from one RNG in the
// order requests arrive, so a run with concurrent clients is reproducible
// in its rates, not request by request; one-shot faults are exact.
package faultproxy

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/store/s3store"
)

// Fault is what the proxy does to one request.
type Fault int

// The faults. None forwards the request and its answer unchanged.
const (
	None Fault = iota
	SlowDown
	InternalError
	Reset
	Latency
	LostAnswer
	numFaults
)

var faultNames = [numFaults]string{"none", "slow_down", "internal_error", "reset", "latency", "lost_answer"}

// String returns the fault's name, such as "lost_answer".
func (f Fault) String() string {
	if f < 0 || f >= numFaults {
		return fmt.Sprintf("Fault(%d)", int(f))
	}
	return faultNames[f]
}

// Rates are the probabilities, each in [0, 1], that a request meets each
// fault; their sum must not exceed 1. A request meets at most one.
type Rates struct {
	SlowDown, InternalError, Reset, Latency, LostAnswer float64
	// LatencyMax bounds the delay of a Latency fault. Defaults to 200ms.
	LatencyMax time.Duration
}

// Total is the probability that a request meets some fault.
func (r Rates) Total() float64 {
	return r.SlowDown + r.InternalError + r.Reset + r.Latency + r.LostAnswer
}

func (r Rates) validate() error {
	for _, v := range []float64{r.SlowDown, r.InternalError, r.Reset, r.Latency, r.LostAnswer} {
		if v < 0 || v > 1 {
			return fmt.Errorf("faultproxy: rate %v is not in [0, 1]", v)
		}
	}
	if t := r.Total(); t > 1+1e-9 {
		return fmt.Errorf("faultproxy: rates add up to %v, over 1", t)
	}
	return nil
}

// LostAnswers returns rate lost answers and nothing else.
func LostAnswers(rate float64) Rates { return Rates{LostAnswer: rate} }

// Mixed returns rate split evenly between the five faults.
func Mixed(rate float64) Rates {
	r := rate / 5
	return Rates{SlowDown: r, InternalError: r, Reset: r, Latency: r, LostAnswer: r}
}

// Mix returns the rates of a named mix: "none", "lost_answers" or "mixed".
func Mix(name string, rate float64) (Rates, error) {
	switch name {
	case "none":
		return Rates{}, nil
	case "lost_answers":
		return LostAnswers(rate), nil
	case "mixed":
		return Mixed(rate), nil
	}
	return Rates{}, fmt.Errorf("faultproxy: no mix %q; the mixes are none, lost_answers, mixed", name)
}

// Options configure Start.
type Options struct {
	// Target is the base URL of the S3 server, such as
	// "http://127.0.0.1:7070". Required.
	Target string
	// Rates are the random faults. Defaults to none (SetRates changes them).
	Rates Rates
	// Seed seeds the RNG of the random faults. Defaults to 0.
	Seed uint64
	// KeyPrefix is cut from the front of each object key before a Match
	// sees it (a store's prefix, such as "test-x/"). Defaults to "".
	KeyPrefix string
	// Only, when set, limits the random faults to requests it matches (the
	// one-shot faults are not limited). Defaults to every request.
	Only *Match
	// Latency is the latency profile added to every request: half of each
	// draw before the request is forwarded, the rest before its answer
	// (a write lands mid-way through its round trip). Defaults to none.
	Latency Profile
	// LatencySeed seeds the latency draws. They have their own RNG, so a
	// run's delays do not depend on its faults, and two runs with the same
	// seed draw the same delays.
	LatencySeed uint64
}

// Counts are what the proxy has seen and injected.
type Counts struct {
	// Requests counts every request received.
	Requests int64
	// Injected counts the faults injected, by fault (None is unused).
	Injected [numFaults]int64
}

// Total is the number of faults injected.
func (c Counts) Total() int64 {
	var n int64
	for _, v := range c.Injected[1:] {
		n += v
	}
	return n
}

// String lists the non-zero counts, such as "requests=120 lost_answer=3".
func (c Counts) String() string {
	s := fmt.Sprintf("requests=%d", c.Requests)
	for f := SlowDown; f < numFaults; f++ {
		if c.Injected[f] > 0 {
			s += fmt.Sprintf(" %s=%d", f, c.Injected[f])
		}
	}
	return s
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is the proxy's base URL ("http://127.0.0.1:PORT"): the endpoint
	// clients use instead of the server's.
	URL string

	target    *url.URL
	keyPrefix string
	only      *Match
	transport *http.Transport
	srv       *http.Server
	ln        net.Listener

	mu      sync.Mutex
	rng     *rand.Rand
	rates   Rates
	shots   []*Shot
	latency *Delays
	tracing bool
	trace   []Entry

	requests atomic.Int64
	injected [numFaults]atomic.Int64
}

// Start starts a proxy on a free 127.0.0.1 port in front of opts.Target.
func Start(opts Options) (*Proxy, error) {
	target, err := url.Parse(opts.Target)
	if err != nil || target.Scheme != "http" || target.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not an http:// base URL", opts.Target)
	}
	if err := opts.Rates.validate(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen: %w", err)
	}
	p := &Proxy{
		URL:       "http://" + ln.Addr().String(),
		target:    target,
		keyPrefix: opts.KeyPrefix,
		only:      opts.Only,
		transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second, DisableCompression: true},
		ln:        ln,
		rng:       rand.New(rand.NewPCG(opts.Seed, 0x5eed)),
		rates:     opts.Rates,
		latency:   NewDelays(opts.Latency, opts.LatencySeed),
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// Close stops the proxy and cuts the connections it holds.
func (p *Proxy) Close() error {
	err := p.srv.Close()
	p.transport.CloseIdleConnections()
	return err
}

// Config returns c with the proxy as its endpoint (path-style): an
// s3store client made from it sends every request through the proxy.
func (p *Proxy) Config(c s3store.Config) s3store.Config {
	c.Endpoint = p.URL
	c.PathStyle = true
	return c
}

// SetRates changes the random faults from now on.
func (p *Proxy) SetRates(r Rates) error {
	if err := r.validate(); err != nil {
		return err
	}
	p.mu.Lock()
	p.rates = r
	p.mu.Unlock()
	return nil
}

// Counts returns what the proxy has seen and injected so far.
func (p *Proxy) Counts() Counts {
	var c Counts
	c.Requests = p.requests.Load()
	for f := range c.Injected {
		c.Injected[f] = p.injected[f].Load()
	}
	return c
}

// Shot is a one-shot fault: it fires on the Nth request its Match matches,
// once.
type Shot struct {
	fault Fault
	match Match
	nth   int
	seen  int  // matching requests so far; guarded by Proxy.mu
	fired bool // guarded by Proxy.mu
	p     *Proxy
}

// Fired reports whether the shot has fired.
func (s *Shot) Fired() bool {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.fired
}

// Seen returns how many requests the shot's Match has matched so far.
func (s *Shot) Seen() int {
	s.p.mu.Lock()
	defer s.p.mu.Unlock()
	return s.seen
}

// Inject arms a one-shot fault on the nth (from 1) request that the match
// pattern matches (ParseMatch), counting from now. A request with an armed
// shot meets that fault and no random one.
func (p *Proxy) Inject(f Fault, pattern string, nth int) (*Shot, error) {
	m, err := ParseMatch(pattern)
	if err != nil {
		return nil, err
	}
	if nth < 1 {
		return nil, fmt.Errorf("faultproxy: nth is %d, want 1 or more", nth)
	}
	if f <= None || f >= numFaults {
		return nil, fmt.Errorf("faultproxy: cannot inject %v", f)
	}
	s := &Shot{fault: f, match: m, nth: nth, p: p}
	p.mu.Lock()
	p.shots = append(p.shots, s)
	p.mu.Unlock()
	return s, nil
}

// Disarm removes every shot that has not fired.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	p.shots = nil
	p.mu.Unlock()
}

// objectKey returns the object key of a path-style request
// (/bucket/key...), with the proxy's key prefix cut, and whether there is
// one under that prefix.
func (p *Proxy) objectKey(r *http.Request) (string, bool) {
	path := strings.TrimPrefix(r.URL.Path, "/")
	_, key, ok := strings.Cut(path, "/")
	if !ok || key == "" {
		return "", false
	}
	return strings.CutPrefix(key, p.keyPrefix)
}

// cond names a request's write condition.
func cond(h http.Header) string {
	switch {
	case h.Get("If-None-Match") != "":
		return "create"
	case h.Get("If-Match") != "":
		return "cas"
	}
	return "plain"
}

// choose picks the request's fault: an armed shot first, else a draw.
func (p *Proxy) choose(r *http.Request) (f Fault, d time.Duration) {
	key, isKey := p.objectKey(r)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tracing {
		defer func() { p.trace = append(p.trace, Entry{Method: r.Method, Key: key, Cond: cond(r.Header), Fault: f}) }()
	}
	for i, s := range p.shots {
		if !s.match.matches(r.Method, key, isKey, r.Header) {
			continue
		}
		if s.seen++; s.seen == s.nth {
			s.fired = true
			p.shots = append(p.shots[:i:i], p.shots[i+1:]...)
			return s.fault, p.delay()
		}
	}
	if p.only != nil && !p.only.matches(r.Method, key, isKey, r.Header) {
		return None, 0
	}
	u := p.rng.Float64()
	for _, c := range []struct {
		f    Fault
		rate float64
	}{{SlowDown, p.rates.SlowDown}, {InternalError, p.rates.InternalError}, {Reset, p.rates.Reset}, {Latency, p.rates.Latency}, {LostAnswer, p.rates.LostAnswer}} {
		if u < c.rate {
			return c.f, p.delay()
		}
		u -= c.rate
	}
	return None, 0
}

// delay draws a Latency fault's delay; p.mu is held.
func (p *Proxy) delay() time.Duration {
	max := p.rates.LatencyMax
	if max <= 0 {
		max = 200 * time.Millisecond
	}
	return time.Duration(p.rng.Int64N(int64(max)))
}

// ServeHTTP forwards one request, or answers it with a fault.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p.requests.Add(1)
	f, d := p.choose(r)
	if f != None {
		p.injected[f].Add(1)
	}
	rt := p.latency.Next()
	if !sleep(r.Context(), rt/2) {
		return
	}
	w = &delayedWriter{ResponseWriter: w, ctx: r.Context(), d: rt - rt/2}
	switch f {
	case SlowDown:
		_, _ = io.Copy(io.Discard, r.Body)
		writeS3Error(w, r, http.StatusServiceUnavailable, "SlowDown", "Please reduce your request rate.")
		return
	case InternalError:
		_, _ = io.Copy(io.Discard, r.Body)
		writeS3Error(w, r, http.StatusInternalServerError, "InternalError", "We encountered an internal error. Please try again.")
		return
	case Reset:
		_, _ = io.Copy(io.Discard, r.Body)
		reset(w)
		return
	case Latency:
		select {
		case <-time.After(d):
		case <-r.Context().Done():
			return
		}
	}
	resp, err := p.forward(r)
	if err != nil {
		writeS3Error(w, r, http.StatusBadGateway, "BadGateway", "faultproxy: "+err.Error())
		return
	}
	defer resp.Body.Close()
	if f == LostAnswer {
		// The request has landed: read the whole answer, as a client
		// would, then drop it.
		_, _ = io.Copy(io.Discard, resp.Body)
		reset(w)
		return
	}
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// forward sends r to the target unchanged, Host header included.
func (p *Proxy) forward(r *http.Request) (*http.Response, error) {
	u := *p.target
	u.Path = r.URL.Path
	u.RawPath = r.URL.RawPath
	u.RawQuery = r.URL.RawQuery
	body := r.Body
	if r.ContentLength == 0 {
		body = nil
	}
	out, err := http.NewRequestWithContext(context.WithoutCancel(r.Context()), r.Method, u.String(), body)
	if err != nil {
		return nil, err
	}
	out.Header = r.Header.Clone()
	out.Host = r.Host
	out.ContentLength = r.ContentLength
	out.TransferEncoding = r.TransferEncoding
	return p.transport.RoundTrip(out)
}

// delayedWriter holds the answer back by the second half of a latency
// draw: it sleeps before the first header or body byte goes out.
type delayedWriter struct {
	http.ResponseWriter
	ctx   context.Context
	d     time.Duration
	slept bool
}

func (w *delayedWriter) wait() {
	if !w.slept {
		w.slept = true
		sleep(w.ctx, w.d)
	}
}

func (w *delayedWriter) WriteHeader(status int) { w.wait(); w.ResponseWriter.WriteHeader(status) }

func (w *delayedWriter) Write(b []byte) (int, error) { w.wait(); return w.ResponseWriter.Write(b) }

// Unwrap lets http.ResponseController reach the connection (reset).
func (w *delayedWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// reset cuts the client's connection with a TCP reset and no answer.
func reset(w http.ResponseWriter) {
	if dw, ok := w.(*delayedWriter); ok {
		dw.wait() // the reset arrives when the answer would have
	}
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // net/http closes the connection
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// writeS3Error answers with an S3 error document.
func writeS3Error(w http.ResponseWriter, r *http.Request, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	_, _ = fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?>`+"\n"+
		`<Error><Code>%s</Code><Message>%s</Message><Resource>%s</Resource><RequestId>faultproxy</RequestId></Error>`,
		code, message, xmlEscape(r.URL.Path))
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}

// Front starts a proxy in front of srv (opts.Target is set to its
// endpoint, opts.KeyPrefix to prefix) and returns it with a store on
// srv's bucket under prefix whose every request goes through the proxy.
func Front(ctx context.Context, srv *s3local.Server, prefix string, opts Options) (*Proxy, *s3store.Store, error) {
	opts.Target = srv.Endpoint
	opts.KeyPrefix = prefix
	p, err := Start(opts)
	if err != nil {
		return nil, nil, err
	}
	client, err := s3store.NewClient(ctx, p.Config(srv.Config()))
	if err != nil {
		p.Close()
		return nil, nil, err
	}
	return p, s3store.New(client, srv.Bucket, prefix), nil
}
