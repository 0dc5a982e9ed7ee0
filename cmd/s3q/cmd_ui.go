package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/ui"
)

// uiCommand is s3q ui.
func uiCommand() *command {
	var addr, hosts, token string
	var noToken bool
	var refresh durationFlag
	return &command{
		name: "ui", summary: "serve the web console of a deployment (or of s3q dev) to open in your browser",
		details: `Serves the console on --addr (default 127.0.0.1:8090): queues with their
counts, the tasks of a queue, a task's input, output, deadline and timeline,
dead letters and expired tasks with retry, cancel and expire, schedules with
their next and recent fires. Every page talks to the API at --url (or
S3Q_URL) through the Go client; requests to *.amazonaws.com are signed with
SigV4 from your AWS credential chain (AWS_PROFILE, ...), so the console can
do what those credentials may do, and nothing more.

Each page's footer says how many S3 requests the view cost (docs/console.md
lists each view's cost). Pages refresh themselves every --refresh while
their tab is visible.

The console acts with your AWS credentials, so it asks for a login token,
as Jupyter does: s3q ui prints the console's URL with ?token=...; opening it
sets a cookie (HttpOnly, SameSite=Strict) and every later request needs that
cookie (or the token again). The token is fresh each run unless --token or
S3Q_UI_TOKEN gives one. --no-token turns it off, on a loopback --addr only:
an address other hosts can reach is refused without a token.

The console answers only requests naming localhost or a loopback address
(and --host names).

Examples:
  s3q ui
  s3q ui --url https://abc123.execute-api.eu-west-1.amazonaws.com
  s3q ui --addr 127.0.0.1:9000 --refresh 30s`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&addr, "addr", ui.DefaultAddr, "`address` to serve the console on")
			fs.Var(&refresh, "refresh", "how often pages refresh themselves, a `duration` (default 5s; 0s: never)")
			fs.StringVar(&hosts, "host", "", "more host `names`, comma-separated, the console answers to (behind a proxy)")
			fs.StringVar(&token, "token", "", "the login `token` (default: S3Q_UI_TOKEN, else a fresh random one, printed in the URL)")
			fs.BoolVar(&noToken, "no-token", false, "serve without a login token (refused unless --addr is a loopback address)")
		},
		run: func(ctx context.Context, e *env, args []string) error {
			if len(args) != 0 {
				return usageErr("ui takes no arguments")
			}
			opts := ui.Options{Refresh: refresh.d}
			if refresh.set && refresh.d == 0 {
				opts.Refresh = -1
			}
			for _, h := range strings.Split(hosts, ",") {
				if h = strings.TrimSpace(h); h != "" {
					opts.Hosts = append(opts.Hosts, h)
				}
			}
			token = cmp.Or(token, os.Getenv("S3Q_UI_TOKEN"))
			switch {
			case noToken && token != "":
				return usageErr("--no-token and a token (--token or S3Q_UI_TOKEN) contradict each other")
			case noToken && !loopbackAddr(addr):
				return flagErr("no-token", "", "refused: --addr %s is reachable from other hosts, and the console acts with your AWS credentials; keep the token, or serve on 127.0.0.1", addr)
			case !noToken && token == "":
				token = newUIToken()
			}
			console, err := ui.New(ctx, e.url, client.Options{UserAgent: "s3q-console/" + version}, opts)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				return fmt.Errorf("listen on %s: %w", addr, err)
			}
			mux := http.NewServeMux()
			mux.Handle("/", http.RedirectHandler(console.Prefix()+"/", http.StatusFound))
			mux.Handle(console.Prefix()+"/", console)
			var h http.Handler = mux
			at := fmt.Sprintf("http://%s%s/", ln.Addr(), console.Prefix())
			if token != "" {
				h = tokenGate(token, mux)
				at += "?token=" + url.QueryEscape(token)
			}
			srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(e.stdout, "s3q ui: the console of %s is at %s\n", e.url, at)
			served := make(chan error, 1)
			go func() { served <- srv.Serve(ln) }()
			select {
			case err := <-served:
				return err
			case <-ctx.Done():
			}
			shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := srv.Shutdown(shut); err != nil {
				return err
			}
			if err := <-served; !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
}

// uiTokenCookie is the cookie that carries the console's login token.
const uiTokenCookie = "s3q_ui_token"

// newUIToken returns a fresh login token: 128 random bits in hex.
func newUIToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// loopbackAddr reports whether a listen address serves loopback only.
func loopbackAddr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// tokenGate serves next only to a request that carries token: as the
// cookie uiTokenCookie, or as ?token= (which sets the cookie and
// redirects to the same URL without it, so the token leaves the address
// bar). Any other request is 401 with a line saying where the URL is.
func tokenGate(token string, next http.Handler) http.Handler {
	same := func(got string) bool { return subtle.ConstantTimeCompare([]byte(got), []byte(token)) == 1 }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("token") {
			if !same(q.Get("token")) {
				http.Error(w, "s3q ui: wrong token: open the URL s3q ui printed", http.StatusUnauthorized)
				return
			}
			http.SetCookie(w, &http.Cookie{Name: uiTokenCookie, Value: token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
			q.Del("token")
			u := *r.URL
			u.RawQuery = q.Encode()
			http.Redirect(w, r, u.RequestURI(), http.StatusFound)
			return
		}
		if c, err := r.Cookie(uiTokenCookie); err != nil || !same(c.Value) {
			http.Error(w, "s3q ui: this console needs its login token: open the URL s3q ui printed (…/ui/?token=…)", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}
