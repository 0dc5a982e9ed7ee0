// Command dispatch is the Lambda function that delivers the due tasks of
// push queues to their targets (a Lambda function or an HTTPS URL), woken
// by submit for tasks due now and by an EventBridge rule every minute.
// It is thin: everything is in lambdafn.Main and package dispatch.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Dispatch) }
