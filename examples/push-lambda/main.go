// Command push-lambda is an example Lambda push target: the pull worker's
// handlers, served by worker.LambdaHandler. Deploy it as a function
// (provided.al2023) and name it in the queue's target ({"lambda": "..."});
// the dispatch function invokes it with {task, lease, deadline}. A handler
// error fails the task (retried; worker.Permanent is not), and its
// context ends at the delivery's deadline.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/s3q/s3q/shared/worker"
)

func main() {
	lambda.Start(worker.LambdaHandler(map[string]worker.Handler{
		"email.send": func(ctx context.Context, t *worker.Task) (json.RawMessage, error) {
			var in struct {
				To string `json:"to"`
			}
			if err := json.Unmarshal(t.Input, &in); err != nil || in.To == "" {
				return nil, worker.Permanent(errors.New("input needs a \"to\""))
			}
			if t.ShouldAbort(0) {
				return nil, errors.New("past the task's deadline")
			}
			return json.RawMessage(fmt.Sprintf(`{"sent_to":%q}`, in.To)), nil
		},
	}))
}
