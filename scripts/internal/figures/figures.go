// Package figures is what the measuring programs under scripts/ (bench,
// latency) share: the program's log prefix, which figures a run prints
// (-only), the lists of counts and latency profiles their flags take, and
// the versitygw they measure on. Each of its functions ends the program
// with a message on a bad value or a failure, as a flag error would.
package figures

import (
	"context"
	"fmt"
	"log"
	"os"
	"strconv"
	"strings"

	"github.com/s3q/s3q/shared/s3local"
	"github.com/s3q/s3q/shared/s3local/faultproxy"
)

// Program prefixes the log of the program name ("bench: ...") and returns
// whether a figure is to run: only, the -only flag's value, names the
// figures to run, comma-separated; empty runs them all.
func Program(name, only string) (run func(figure string) bool) {
	log.SetFlags(0)
	log.SetPrefix(name + ": ")
	return func(figure string) bool { return only == "" || strings.Contains(","+only+",", ","+figure+",") }
}

// Counts parses a flag's comma-separated list of positive whole numbers
// ("1,4,16").
func Counts(s string) []int {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			log.Fatalf("bad count %q in %q: want whole numbers from 1, comma-separated", f, s)
		}
		out = append(out, n)
	}
	return out
}

// Profiles parses a flag's comma-separated list of latency profile names
// ("none,typical"; faultproxy.LatencyProfile).
func Profiles(s string) []faultproxy.Profile {
	var out []faultproxy.Profile
	for _, name := range strings.Split(s, ",") {
		p, err := faultproxy.LatencyProfile(strings.TrimSpace(name))
		if err != nil {
			log.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// VersityGW starts the versitygw the figures are measured on (installed
// by scripts/install-versitygw), saying so on stderr. The caller closes it.
func VersityGW(ctx context.Context) *s3local.Server {
	fmt.Fprintln(os.Stderr, log.Prefix()+"starting versitygw", s3local.VersityGWVersion)
	srv, err := s3local.StartVersityGW(ctx, "")
	if err != nil {
		log.Fatal(err)
	}
	return srv
}
