package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/s3q/s3q/shared/client"
	"github.com/s3q/s3q/shared/ui"
)

// uiCommand is s3q ui.
func uiCommand() *command {
	var addr string
	var hosts string
	var refresh durationFlag
	return &command{
		name: "ui", summary: "open the web console of a deployment (or of s3q dev) in your browser",
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

The console answers only requests naming localhost or a loopback address
(and --host names): keep it on 127.0.0.1 unless you put it behind your own
authentication.

Examples:
  s3q ui
  s3q ui --url https://abc123.execute-api.eu-west-1.amazonaws.com
  s3q ui --addr 127.0.0.1:9000 --refresh 30s`,
		flags: func(fs *flag.FlagSet) {
			fs.StringVar(&addr, "addr", ui.DefaultAddr, "`address` to serve the console on")
			fs.Var(&refresh, "refresh", "how often pages refresh themselves (default 5s; 0s: never)")
			fs.StringVar(&hosts, "host", "", "more host `names`, comma-separated, the console answers to (behind a proxy)")
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
			srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
			fmt.Fprintf(e.stdout, "s3q ui: the console of %s is at http://%s%s/\n", e.url, ln.Addr(), console.Prefix())
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
