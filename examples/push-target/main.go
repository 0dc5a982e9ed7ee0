// Command push-target is an example HTTPS push target: it verifies each
// delivery's signature (worker.VerifySignature) and runs the task's
// handler. Its answer decides the task: 2xx completes it with the body as
// output, 429/5xx retry it (honouring Retry-After), another 4xx fails it
// without retry.
//
//	S3Q_PUSH_SECRET=dev-secret go run ./examples/push-target -addr 127.0.0.1:9000
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
	"time"

	"github.com/s3q/s3q/shared/worker"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:9000", "address to listen on")
	flag.Parse()
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
		if err := worker.VerifySignature(secret, r.Header, body, time.Now(), 5*time.Minute); err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
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
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"handled_by":"push-target","input":%s}`, orNull(p.Task.Input))
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
