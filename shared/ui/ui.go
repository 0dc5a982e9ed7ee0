// Package ui is the s3q console: HTML pages over the HTTP API, served by
// `s3q ui` (any deployment, through the Go client and its SigV4 signing)
// and under /ui by `s3q dev`.
//
// Every page is rendered on the server with html/template from the API's
// answers; a little JavaScript (static/app.js) refreshes a page in place,
// counts down deadlines, and leaves the page alone while its tab is
// hidden. Templates, styles and script are embedded: no build step, no
// CDN, it works offline.
//
// Each view makes a bounded number of API calls, each bounded in S3
// requests (docs/console.md lists them), and its footer shows what the
// page view cost: the sum of the S3q-S3-Requests header of every API
// answer it read (api.HeaderS3Requests).
//
// Pages, under Options.Prefix (default /ui), each a URL that can be shared:
//
//	/                                  queues, with counts, oldest pending task and settings
//	/queues/{queue}                    tasks of a queue (?status=&type=&cursor=)
//	/queues/{queue}/tasks/{id}         task detail: input, output, deadline, timeline
//	/queues/{queue}/tasks/{id}/artifact?name=  an artifact's download link
//	/dead                              failed, expired or cancelled tasks, with actions
//	/schedules                         schedules of a queue (?queue=)
//	/queues/{queue}/schedules/{id}     schedule detail: next and recent fires
//	/events                            recent task events (s3q dev only)
//	/find?ref=                         opens a task by queue/id
//
// Actions (retry, cancel, expire on selected tasks; retry, cancel, expire
// on every task of a status, through the API's bulk operations; trigger
// and delete of a schedule) go through a confirmation page that says what
// will happen (/confirm, /queues/{queue}/bulk); pausing and resuming a
// queue or a schedule acts at once. Every POST carries a CSRF token bound
// to a cookie, and every page is served with a strict
// Content-Security-Policy. Counts by status, the oldest pending task,
// pausing a queue and the bulk operations are shown only by an API that
// has the queue operations (GET /queues/{queue}/stats, ...).
package ui

import (
	"context"
	"crypto/rand"
	"embed"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/events"
)

// Defaults of Options.
const (
	DefaultPrefix   = "/ui"
	DefaultRefresh  = 5 * time.Second
	DefaultPageSize = 50
	// DefaultAddr is where `s3q ui` listens.
	DefaultAddr = "127.0.0.1:8090"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// EventSource is where the events page reads recent task events from:
// the dev server's ring (*events.Ring). A deployment publishes its events
// to EventBridge, which the console does not read.
type EventSource interface {
	// Recent returns the latest events, newest first, at most limit.
	Recent(limit int) []events.Record
}

var _ EventSource = (*events.Ring)(nil)

// Options configure a Console. The zero value is ready to use.
type Options struct {
	// Prefix is the path the console is served under: "" or a path
	// without a trailing slash. Defaults to DefaultPrefix ("/ui").
	Prefix string
	// Events, when set, adds the events page. Defaults to none.
	Events EventSource
	// Refresh is how often a page refreshes itself while its tab is
	// visible (it backs off while nothing changes, and stops while the tab
	// is hidden); negative turns refresh off. Defaults to DefaultRefresh.
	Refresh time.Duration
	// PageSize is the number of tasks per page. Defaults to 50.
	PageSize int
	// Hosts are the host names (without port) the console answers besides
	// localhost and loopback addresses: a request naming another Host is
	// refused, so that a web page cannot reach the console through DNS
	// rebinding. Defaults to none.
	Hosts []string
	// Now is the clock the pages read for ages and countdowns. Defaults
	// to time.Now.
	Now func() time.Time
	// Logger receives the errors of the console itself. Defaults to
	// slog.Default().
	Logger *slog.Logger
}

// Console serves the console's pages. It is safe for concurrent use.
type Console struct {
	api     *client.Client
	opts    Options
	tmpl    map[string]*template.Template
	static  http.Handler
	mux     *http.ServeMux
	csrfKey []byte
	recent  recentStats // the queues page's stats, reused for statsReuse
}

var _ http.Handler = (*Console)(nil)

// New returns the console over the API at baseURL. copts configure the
// client (SigV4, region, credentials, HTTP client): the console wraps the
// HTTP client's transport to read what each API answer cost.
func New(ctx context.Context, baseURL string, copts client.Options, opts Options) (*Console, error) {
	if opts.Prefix == "" {
		opts.Prefix = DefaultPrefix
	}
	opts.Prefix = strings.TrimRight(opts.Prefix, "/")
	if opts.Refresh == 0 {
		opts.Refresh = DefaultRefresh
	}
	if opts.PageSize <= 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	hc := &http.Client{Timeout: 30 * time.Second}
	if copts.HTTPClient != nil {
		c := *copts.HTTPClient
		hc = &c
	}
	hc.Transport = &costTransport{next: hc.Transport}
	copts.HTTPClient = hc
	if copts.UserAgent == "" {
		copts.UserAgent = "s3q-console"
	}
	if copts.MaxRetries == 0 {
		copts.MaxRetries = 1 // a page shows the error rather than keep its reader waiting
	}
	api, err := client.New(ctx, baseURL, copts)
	if err != nil {
		return nil, err
	}
	tmpl, err := parseTemplates()
	if err != nil {
		return nil, err
	}
	sub, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	c := &Console{api: api, opts: opts, tmpl: tmpl, csrfKey: make([]byte, 32)}
	rand.Read(c.csrfKey)
	c.static = http.StripPrefix(opts.Prefix+"/static/", http.FileServerFS(sub))
	c.routes()
	return c, nil
}

// Prefix returns the path the console is served under, such as "/ui".
func (c *Console) Prefix() string { return c.opts.Prefix }

// routes builds the console's mux.
func (c *Console) routes() {
	p := c.opts.Prefix
	m := http.NewServeMux()
	page := func(pattern string, h func(*http.Request) (*view, error)) {
		m.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) { c.servePage(w, r, h) })
	}
	page("GET "+p+"/{$}", c.queuesPage)
	page("GET "+p+"/queues/{queue}", c.tasksPage)
	page("GET "+p+"/queues/{queue}/tasks/{id}", c.taskPage)
	page("GET "+p+"/dead", c.deadPage)
	page("GET "+p+"/schedules", c.schedulesPage)
	page("GET "+p+"/queues/{queue}/schedules/{id}", c.schedulePage)
	page("GET "+p+"/events", c.eventsPage)
	page("GET "+p+"/confirm", c.confirmPage)
	page("POST "+p+"/do", c.doAction)
	page("GET "+p+"/queues/{queue}/bulk", c.bulkConfirmPage)
	page("POST "+p+"/queues/{queue}/bulk", c.bulkDo)
	m.HandleFunc("GET "+p+"/find", c.find)
	m.HandleFunc("GET "+p+"/queues/{queue}/tasks/{id}/artifact", c.artifact)
	m.HandleFunc("POST "+p+"/queues/{queue}/schedules/{id}/{op}", c.toggle)
	m.HandleFunc("POST "+p+"/queues/{queue}/{op}", c.toggle)
	m.Handle("GET "+p+"/static/", c.static)
	if p != "" {
		m.HandleFunc("GET "+p, func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, p+"/", http.StatusFound)
		})
	}
	page(p+"/", func(*http.Request) (*view, error) {
		return nil, pageError(http.StatusNotFound, "not_found", "", "no such page")
	})
	c.mux = m
}

// ServeHTTP serves one request of the console: every answer with the
// security headers, a request naming a foreign Host refused.
func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	// same-origin, not no-referrer: a browser then sends Origin with the
	// console's own POSTs, which checkCSRF reads; no URL leaves the site.
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	if !c.hostAllowed(r.Host) {
		http.Error(w, "s3q console: this Host is not allowed (see --host)", http.StatusForbidden)
		return
	}
	if r.Method == http.MethodPost {
		c.recent.clear() // an action changes counts: the next views read them again
	}
	c.mux.ServeHTTP(w, r)
}

// hostAllowed reports whether the request's Host header names the
// console: localhost, a loopback address or one of Options.Hosts.
func (c *Console) hostAllowed(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.Trim(host, "[]")
	if host == "localhost" || slices.Contains(c.opts.Hosts, host) {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// pageErr is an error a page shows: an API error or the console's own.
type pageErr struct {
	Status  int
	Code    string
	Field   string
	Message string
}

func (e *pageErr) Error() string { return fmt.Sprintf("%d %s: %s", e.Status, e.Code, e.Message) }

// pageError returns the console's own error (a bad query parameter).
func pageError(status int, code, field, format string, args ...any) *pageErr {
	return &pageErr{Status: status, Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}
