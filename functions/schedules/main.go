// Command schedules is the Lambda function behind the schedule routes of the HTTP
// API (/queues/{queue}/schedules/...): create, list, get, update, delete, pause,
// resume, trigger and history of the cron schedules.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Schedules) }
