package devserver

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/s3q/s3q/shared/api"
	s3qevents "github.com/s3q/s3q/shared/events"
	"github.com/s3q/s3q/shared/lambdafn"
	"github.com/s3q/s3q/shared/ui"
)

// gateway plays API Gateway in front of the HTTP functions: it turns a
// request into a payload format 2.0 event, invokes the function owning
// its route with the event's JSON (as Lambda would), and writes the
// function's response back.
type gateway struct {
	functions map[string]*function
	log       *slog.Logger
	events    *s3qevents.Ring // the task events GET /events shows
	console   *ui.Console     // the pages under /ui
	hosts     []string        // names besides localhost and IP addresses a request's Host may give (Options.Hosts)
}

// function is one Lambda function of the dev server: a set of execution
// environments, each a handler made by lambdafn.New that serves one
// invocation at a time, as Lambda runs them. Concurrent requests get
// environments of their own (made when none is idle), never a shared one:
// a lambda.Handler's Invoke answers with bytes of a buffer it has already
// returned to its pool, which the next invocation of that handler
// overwrites, so an answer is copied before its environment is reused.
type function struct {
	new func() (lambda.Handler, error)

	mu   sync.Mutex
	idle []lambda.Handler
}

// newFunction returns the named function over d, with one environment
// made (so that a bad configuration fails at start).
func newFunction(name string, d lambdafn.Deps) (*function, error) {
	f := &function{new: func() (lambda.Handler, error) { return lambdafn.New(name, d) }}
	h, err := f.new()
	if err != nil {
		return nil, err
	}
	f.idle = append(f.idle, h)
	return f, nil
}

// invoke runs one invocation in an idle environment (or a new one) and
// returns a copy of its answer, made before the environment serves
// another invocation.
func (f *function) invoke(ctx context.Context, payload []byte) ([]byte, error) {
	f.mu.Lock()
	var h lambda.Handler
	if n := len(f.idle); n > 0 {
		h, f.idle = f.idle[n-1], f.idle[:n-1]
	}
	f.mu.Unlock()
	if h == nil {
		var err error
		if h, err = f.new(); err != nil {
			return nil, err
		}
	}
	out, err := h.Invoke(ctx, payload)
	out = bytes.Clone(out)
	f.mu.Lock()
	f.idle = append(f.idle, h)
	f.mu.Unlock()
	return out, err
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if p := r.URL.Path; p != g.console.Prefix() && !strings.HasPrefix(p, g.console.Prefix()+"/") {
		// The console checks its own requests (CSRF token, Host).
		if !hostAllowed(r.Host, g.hosts) {
			// Always, browser headers or not: a page whose name was
			// rebound to this address may come from a browser that sends
			// neither Origin nor Sec-Fetch-Site.
			writeErrorField(w, http.StatusForbidden, "forbidden", "Host",
				"s3q dev answers only at localhost, an IP address or a name given with --host, not "+r.Host+" (a name rebound to this address is how a web page reaches a local server)")
			return
		}
		if field, msg := fromWebPage(r); field != "" && (p != "/" || r.Method != http.MethodGet) {
			writeErrorField(w, http.StatusForbidden, "forbidden", field, msg)
			return
		}
	}
	switch p := r.URL.Path; {
	case p == eventsPath:
		g.serveEvents(w, r)
		return
	case p == g.console.Prefix() || strings.HasPrefix(p, g.console.Prefix()+"/"):
		g.console.ServeHTTP(w, r)
		return
	case p == "/" && r.Method == http.MethodGet && strings.Contains(r.Header.Get("Accept"), "text/html"):
		// A browser opening the server's address finds the console.
		http.Redirect(w, r, g.console.Prefix()+"/", http.StatusFound)
		return
	}
	if strings.HasPrefix(r.URL.Path, invokePrefix) {
		g.serveInvoke(w, r)
		return
	}
	ev, err := lambdafn.EventFromRequest(r, api.DefaultMaxBodyBytes)
	if err != nil {
		writeErrorField(w, http.StatusBadRequest, "invalid_input", "body", "the body could not be read: "+err.Error())
		return
	}
	name := lambdafn.FunctionForRequest(r.Method, r.URL.Path)
	payload, err := json.Marshal(ev)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "encode event: "+err.Error())
		return
	}
	out, err := g.functions[name].invoke(r.Context(), payload)
	if err != nil {
		// API Gateway answers 500 when a function fails.
		g.log.Error("function failed", "function", name, "error", err)
		writeError(w, http.StatusInternalServerError, "internal", "function "+name+" failed")
		return
	}
	var resp events.APIGatewayV2HTTPResponse
	if err := json.Unmarshal(out, &resp); err != nil {
		g.log.Error("function answered no API Gateway response", "function", name, "error", err)
		writeError(w, http.StatusInternalServerError, "internal", "function "+name+" answered no response")
		return
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(resp.Body); err != nil {
			writeError(w, http.StatusInternalServerError, "internal", "function "+name+" answered bad base64")
			return
		}
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body)
}

// fromWebPage returns the header and the reason to refuse a request a web
// page sent to the API, which has no authentication in s3q dev: a
// browser's request from another site (a text/plain POST needs no
// preflight). A client that is not a browser sends neither Origin nor
// Sec-Fetch-Site and is not concerned; the Host is checked for every
// request (hostAllowed). It returns "" for a request to serve.
func fromWebPage(r *http.Request) (field, message string) {
	site, origin := r.Header.Get("Sec-Fetch-Site"), r.Header.Get("Origin")
	if site != "" && site != "same-origin" && site != "none" {
		return "Sec-Fetch-Site", "s3q dev refuses API requests from another site's web page (Sec-Fetch-Site: " + site + ")"
	}
	if origin != "" && origin != "http://"+r.Host {
		return "Origin", "s3q dev refuses API requests from another site's web page (Origin: " + origin + ")"
	}
	return "", ""
}

// hostAllowed reports whether a request's Host names this server in a way
// no DNS rebinding can: localhost, an IP address (a rebound name is a
// name), or one of hosts (Options.Hosts).
func hostAllowed(hostport string, hosts []string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	return host == "localhost" || net.ParseIP(host) != nil || slices.Contains(hosts, host)
}

// writeError writes an error in the API's shape.
func writeError(w http.ResponseWriter, status int, code, message string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// eventsPath is the dev server's own route: the task events the sweep
// published, in place of an EventBridge bus. It is not part of the API
// and is not deployed.
const eventsPath = "/events"

// eventsReply is the answer of GET /events.
type eventsReply struct {
	Events []s3qevents.Record `json:"events"`
}

// serveEvents serves GET /events?limit=N: the latest task events, newest
// first, at most limit (default all kept).
func (g *gateway) serveEvents(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", r.Method+" is not allowed here; use GET")
		return
	}
	limit := 0
	for k, vs := range r.URL.Query() {
		if k != "limit" {
			writeErrorField(w, http.StatusBadRequest, "invalid_input", k, "unknown query parameter "+strconv.Quote(k)+"; known: limit")
			return
		}
		n, err := strconv.Atoi(vs[0])
		if err != nil || n < 1 {
			writeErrorField(w, http.StatusBadRequest, "invalid_input", "limit", strconv.Quote(vs[0])+" is not a number of events (at least 1)")
			return
		}
		limit = n
	}
	b, err := json.Marshal(eventsReply{Events: g.events.Recent(limit)})
	if err != nil {
		writeError(w, http.StatusInternalServerError, "internal", "encode events: "+err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(append(b, '\n'))
}

// writeErrorField writes an error naming the request field at fault.
func writeErrorField(w http.ResponseWriter, status int, code, field, message string) {
	b, _ := json.Marshal(map[string]any{"error": map[string]string{"code": code, "message": message, "field": field}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}
