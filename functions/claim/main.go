// Command claim is the Lambda function behind POST /queues/{queue}/claim.
// It is thin: everything is in lambdafn.Main.
package main

import "github.com/s3q/s3q/shared/lambdafn"

func main() { lambdafn.Main(lambdafn.Claim) }
