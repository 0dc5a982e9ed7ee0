// Command tasks is the Lambda function behind every other task route of the HTTP API
// (/queues/{queue}/tasks/...): get, list, history, cancel, retry, expire,
// heartbeat, complete, fail, reschedule, and the presigned artifact URLs; the
// queue declarations (PUT|GET|DELETE /queues/{queue}, GET /queues); and GET
// /tasks, the operator's listing across queues.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Tasks) }
