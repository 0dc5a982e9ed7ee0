// Command waits is the Lambda function behind the routes that hold their
// invocation for a while: POST /queues/{queue}/tasks/wait (a submit that
// waits for its task's outcome) and POST /queues/{queue}/claim/wait (a
// claim that long-polls). It runs apart from submit and claim, with its
// own reserved concurrency and route throttles in the stack, so that a
// flood of held waits throttles only waits.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Waits) }
