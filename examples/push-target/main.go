// Command push-target is an example HTTPS push target: it verifies each
// delivery's signature (worker.VerifySignature: the secret, its own URL as
// the queue declares it, and the queue it serves) and runs the task's
// handler once per (task id, attempt), the idempotency key: a delivery
// that arrives again gets the answer of the first. Its answer decides the
// task: 2xx completes it with the body as output, 429/5xx retry it
// (honouring Retry-After), another 4xx fails it without retry.
//
//	S3Q_PUSH_SECRET=dev-secret go run ./examples/push-target -addr 127.0.0.1:9000 -queue orders
//
// In production it would serve https:// and read the secret from the same
// SSM parameter the queue's target names.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/worker"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	url := flag.String("url", "", "this target's URL exactly as the queue declares it (default http://ADDR/)")
	queue := flag.String("queue", "orders", "the queue whose deliveries this target takes")
	flag.Parse()
	if *url == "" {
		*url = "http://" + *addr + "/"
	}
	var (
		mu   sync.Mutex
		done = map[string][]byte{} // answers by task id and attempt
	)
	secret := os.Getenv("S3Q_PUSH_SECRET")
	if secret == "" {
		secret = "dev-secret"
	}
	http.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		if err != nil {
			http.Error(w, "read", http.StatusBadRequest)
			return
		}
		d, err := worker.VerifySignature(worker.PushTarget{Secret: secret, URL: *url, Queue: *queue}, r, body, time.Now())
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		key := fmt.Sprintf("%s/%d", d.TaskID, d.Attempt)
		mu.Lock()
		answer, seen := done[key]
		mu.Unlock()
		if seen {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write(answer)
			return
		}
		var p worker.Push
		if err := json.Unmarshal(body, &p); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		log.Printf("task %s (%s) attempt %d, answer by %s: %s", p.Task.ID, p.Task.TaskType, p.Task.Attempt, p.Deadline.Format(time.RFC3339), p.Task.Input)
		if p.Task.TaskType == "always.busy" {
			w.Header().Set("Retry-After", "5")
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		answer = fmt.Appendf(nil, `{"handled_by":"push-target","input":%s}`, orNull(p.Task.Input))
		mu.Lock()
		done[key] = answer // a real target keeps these as long as the signature window, in its database
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})
	log.Printf("push target on http://%s/", *addr)
	log.Fatal(http.ListenAndServe(*addr, nil))
}

func orNull(b json.RawMessage) string {
	if len(b) == 0 {
		return "null"
	}
	return string(b)
}
