// Command faultproxy runs the fault-injecting S3 proxy of package
// shared/s3local/faultproxy by hand, in front of any S3-compatible server
// on loopback, so that `s3q dev --endpoint` (or any S3 client) can be
// tried under faults:
//
//	go run ./scripts/faultproxy -target http://127.0.0.1:7070 -mix mixed -rate 0.10
//	go run ./scripts/faultproxy -target http://127.0.0.1:7070 -mix none -latency typical
//	s3q dev --endpoint http://127.0.0.1:PORT --bucket s3q    # PORT as printed
//
// Clients sign for the proxy's address; the proxy forwards every request
// unchanged, Host included. It prints what it injected every -every and
// when stopped (Ctrl-C). It is test support, not part of a deployment.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"time"

	"github.com/s3q/s3q/shared/s3local/faultproxy"
)

func main() {
	target := flag.String("target", "", "base `url` of the S3 server, such as http://127.0.0.1:7070 (required)")
	mix := flag.String("mix", "mixed", "fault `mix`: none, lost_answers or mixed")
	rate := flag.Float64("rate", 0.10, "share of requests that meet a fault")
	seed := flag.Uint64("seed", 1, "seed of the fault draws")
	latency := flag.String("latency", "none", "latency `profile` added to every request: none, or typical (98% 20-40 ms, 2% 150-300 ms)")
	latencySeed := flag.Uint64("latency-seed", 1, "seed of the latency draws (their own RNG)")
	every := flag.Duration("every", 10*time.Second, "print the counts this often (0: only at the end)")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("faultproxy: ")
	if *target == "" {
		flag.Usage()
		os.Exit(2)
	}
	rates, err := faultproxy.Mix(*mix, *rate)
	if err != nil {
		log.Fatal(err)
	}
	profile, err := faultproxy.LatencyProfile(*latency)
	if err != nil {
		log.Fatal(err)
	}
	p, err := faultproxy.Start(faultproxy.Options{Target: *target, Rates: rates, Seed: *seed, Latency: profile, LatencySeed: *latencySeed})
	if err != nil {
		log.Fatal(err)
	}
	defer p.Close()
	fmt.Printf("faultproxy: %s -> %s, mix=%s rate=%.2f seed=%d latency=%s\n", p.URL, *target, *mix, *rate, *seed, profile)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var tick <-chan time.Time
	if *every > 0 {
		t := time.NewTicker(*every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			fmt.Printf("faultproxy: %v\n", p.Counts())
			return
		case <-tick:
			fmt.Printf("faultproxy: %v\n", p.Counts())
		}
	}
}
