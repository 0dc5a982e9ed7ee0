package ui

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/s3q/s3q/shared/api"
	"github.com/s3q/s3q/shared/client"
)

// view is what a page handler returns: the template to render and its
// data.
type view struct {
	template string // a file of templates/, without .html
	title    string
	nav      string // the navigation entry the page belongs to
	data     any
	// refresh is true for a page that refreshes itself.
	refresh bool
	// status is the HTTP status, 200 when 0.
	status int
}

// page is what every template gets.
type page struct {
	Prefix    string
	Title     string
	Nav       string
	View      any
	Err       *pageErr
	Cost      costSnapshot
	CSRF      string
	Refresh   int // seconds between refreshes, 0 for none
	Digest    string
	HasEvents bool
	Now       time.Time
	// Queue is the queue the page is about, which the find box looks an
	// id up in.
	Queue string
}

// servePage runs a page handler with a cost counter, and renders its
// view, or its error in the error page.
func (c *Console) servePage(w http.ResponseWriter, r *http.Request, h func(*http.Request) (*view, error)) {
	ctx, cost := withCost(r.Context())
	r = r.WithContext(ctx)
	token := c.csrfToken(w, r)
	v, err := h(r)
	p := page{Prefix: c.opts.Prefix, CSRF: token, HasEvents: c.opts.Events != nil, Now: c.opts.Now(), Queue: r.PathValue("queue")}
	if p.Queue == "" {
		p.Queue = r.URL.Query().Get("queue")
	}
	status := http.StatusOK
	if err != nil {
		pe := toPageErr(err)
		p.Err, p.Title, status = pe, "Error "+pe.Code, pe.Status
		v = &view{template: "error", nav: navOf(r, c.opts.Prefix)}
	} else {
		p.Title, p.Nav, p.View = v.title, v.nav, v.data
		if v.status != 0 {
			status = v.status
		}
		if v.refresh && c.opts.Refresh > 0 {
			p.Refresh = max(1, int(c.opts.Refresh/time.Second))
			p.Digest = digest(v.data)
		}
	}
	if v.nav == "" {
		v.nav = p.Nav
	}
	p.Nav = v.nav
	p.Cost = cost.snapshot()
	if ck, err := r.Cookie(spentCookie); err == nil {
		// The action that redirected here.
		if n, err := strconv.ParseInt(ck.Value, 10, 64); err == nil && n >= 0 {
			p.Cost.Action = n
		}
		http.SetCookie(w, &http.Cookie{Name: spentCookie, Path: c.opts.Prefix + "/", MaxAge: -1})
	}
	var buf bytes.Buffer
	if err := c.tmpl[v.template].ExecuteTemplate(&buf, "layout", p); err != nil {
		c.opts.Logger.Error("console: render page", "template", v.template, "error", err)
		http.Error(w, "s3q console: could not render this page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set(HeaderPageS3Requests, strconv.FormatInt(p.Cost.Total(), 10))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// HeaderPageS3Requests is the header of every console page: the S3
// requests its view cost, as its footer says.
const HeaderPageS3Requests = "S3q-Page-S3-Requests"

// navOf guesses the navigation entry of a request whose page failed.
func navOf(r *http.Request, prefix string) string {
	switch p := r.URL.Path[len(prefix):]; {
	case len(p) >= 5 && p[:5] == "/dead":
		return "dead"
	case len(p) >= 10 && p[:10] == "/schedules":
		return "schedules"
	case len(p) >= 7 && p[:7] == "/events":
		return "events"
	}
	return "queues"
}

// digest is a short hash of a view's data: a refresh that finds the same
// digest leaves the page as it is and waits longer before the next.
func digest(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:9])
}

// toPageErr turns what a call returned into what a page shows: an API
// error with its status, code and field; the console's own; or an API
// that did not answer (502).
func toPageErr(err error) *pageErr {
	var pe *pageErr
	if errors.As(err, &pe) {
		return pe
	}
	var ae *client.Error
	if errors.As(err, &ae) {
		return &pageErr{Status: ae.Status, Code: ae.Code, Field: ae.Field, Message: ae.Message}
	}
	if errors.Is(err, context.Canceled) {
		return &pageErr{Status: 499, Code: "cancelled", Message: "the request was cancelled"}
	}
	return &pageErr{Status: http.StatusBadGateway, Code: "api_unreachable", Message: err.Error()}
}

// --- what a page view cost ---

// cost counts the API calls of one page view and the S3 requests their
// answers say they made.
type cost struct {
	calls, s3 atomic.Int64
	// uncounted is the calls whose answer carried no S3q-S3-Requests
	// (an API whose store is not counted, or that did not answer).
	uncounted atomic.Int64
}

// costSnapshot is a cost as a page shows it.
type costSnapshot struct {
	Calls, S3, Uncounted int64
	// Action is what the action that redirected to the page cost (a
	// schedule's pause or resume), carried by a cookie.
	Action int64
}

// Total is the S3 requests of the view and of the action before it.
func (c costSnapshot) Total() int64 { return c.S3 + c.Action }

// spentCookie carries the S3 requests of an action to the page it
// redirects to.
const spentCookie = "s3q_spent"

func (c *cost) snapshot() costSnapshot {
	return costSnapshot{Calls: c.calls.Load(), S3: c.s3.Load(), Uncounted: c.uncounted.Load()}
}

type costKey struct{}

func withCost(ctx context.Context) (context.Context, *cost) {
	c := &cost{}
	return context.WithValue(ctx, costKey{}, c), c
}

// costTransport adds each API answer's S3q-S3-Requests to the cost of
// the page view whose context the request carries.
type costTransport struct{ next http.RoundTripper }

func (t *costTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	next := t.next
	if next == nil {
		next = http.DefaultTransport
	}
	resp, err := next.RoundTrip(r)
	if c, ok := r.Context().Value(costKey{}).(*cost); ok {
		c.calls.Add(1)
		n, perr := int64(0), error(nil)
		if err == nil {
			n, perr = strconv.ParseInt(resp.Header.Get(api.HeaderS3Requests), 10, 64)
		}
		if err != nil || perr != nil || n < 0 {
			c.uncounted.Add(1)
		} else {
			c.s3.Add(n)
		}
	}
	return resp, err
}

// --- CSRF ---

// csrfCookie holds a random value per browser; a form's token is the
// console's HMAC of it, so a page of another site can neither read nor
// forge one (the cookie is also SameSite=Strict and HttpOnly).
const csrfCookie = "s3q_csrf"

// csrfToken returns the token the forms of this page carry, setting the
// cookie first when the browser has none.
func (c *Console) csrfToken(w http.ResponseWriter, r *http.Request) string {
	ck, err := r.Cookie(csrfCookie)
	if err != nil || len(ck.Value) < 16 {
		ck = &http.Cookie{Name: csrfCookie, Value: rand.Text(), Path: c.opts.Prefix + "/",
			HttpOnly: true, SameSite: http.SameSiteStrictMode}
		http.SetCookie(w, ck)
	}
	return c.sign(ck.Value)
}

func (c *Console) sign(v string) string {
	m := hmac.New(sha256.New, c.csrfKey)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// checkCSRF checks a POST: its form's token must be the HMAC of the
// cookie, and a browser's Origin or Sec-Fetch-Site, when sent, must say
// the request comes from the console's own pages.
func (c *Console) checkCSRF(r *http.Request) error {
	refused := pageError(http.StatusForbidden, "csrf", "csrf", "this form is stale or came from another site: reload the page and try again")
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" {
		return refused
	}
	if o := r.Header.Get("Origin"); o != "" && o != "http://"+r.Host && o != "https://"+r.Host {
		return refused
	}
	ck, err := r.Cookie(csrfCookie)
	if err != nil {
		return refused
	}
	if !hmac.Equal([]byte(r.PostFormValue("csrf")), []byte(c.sign(ck.Value))) {
		return refused
	}
	return nil
}

// --- templates ---

// parseTemplates parses each page with the layout and the shared parts.
func parseTemplates() (map[string]*template.Template, error) {
	pages, err := templateFS.ReadDir("templates")
	if err != nil {
		return nil, err
	}
	out := map[string]*template.Template{}
	for _, e := range pages {
		name := e.Name()[:len(e.Name())-len(".html")]
		if name == "layout" || name == "parts" {
			continue
		}
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/parts.html", "templates/"+e.Name())
		if err != nil {
			return nil, err
		}
		out[name] = t
	}
	return out, nil
}
