// Command sweep-expired is the Lambda function EventBridge fires every minute to
// expire overdue tasks, reclaim expired leases, publish Task Expired and Task
// Dead-Lettered events and delete the artifacts that are due.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.SweepExpired) }
