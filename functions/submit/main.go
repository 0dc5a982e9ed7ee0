// Command submit is the Lambda function behind POST /queues/{queue}/tasks and
// POST /queues/{queue}/tasks/batch.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Submit) }
