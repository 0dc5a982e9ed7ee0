// Command schedule-tick is the Lambda function EventBridge fires every minute to
// fire the due cron schedules.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.ScheduleTick) }
