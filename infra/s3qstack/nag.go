package s3qstack

import (
	"encoding/json"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// suppressFindings records, with a reason each, the cdk-nag AwsSolutions
// findings the stack accepts. Everything else is a finding to fix: the
// template tests fail on any unsuppressed AwsSolutions error or warning.
func suppressFindings(b *builder) {
	cdknag.NagSuppressions_AddResourceSuppressions(b.out.Bucket, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("The state bucket is written only by the stack's own functions; bucket versioning keeps every " +
			"change of every record (the task history), and CloudTrail S3 data events are the audit option where an " +
			"account needs one. Server access logs would add a second bucket and a log object per request."),
	}}, jsii.Bool(true))

	// IAM5, per role, for exactly its own object wildcards ("q/*/tasks/*":
	// queue names, ids and times), spelled out one by one:
	// a grant on the whole bucket ("<Bucket.Arn>/*") or on any other
	// prefix stays a finding.
	bucketID := b.stack.Resolve(b.out.Bucket.Node().DefaultChild().(awscdk.CfnResource).LogicalId()).(string)
	for name, role := range b.roles {
		var applies []interface{}
		for _, p := range b.wildcards[name] {
			applies = append(applies, IAM5Finding(bucketID, p))
		}
		if len(applies) == 0 {
			continue
		}
		cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("Object actions are scoped to the key prefixes the function uses (q/*/tasks/*, q/*/index/ready/*, sweep/*, ...): " +
				"the wildcards stand for queue names, task ids and times, which are data, not a broader grant."),
			AppliesTo: &applies,
		}}, jsii.Bool(true))
	}

	// In environments that do not retain data, autoDeleteObjects adds CDK's
	// own provider function that empties the bucket when the stack goes.
	if provider := b.stack.Node().TryFindChild(jsii.String("Custom::S3AutoDeleteObjectsCustomResourceProvider")); provider != nil {
		cdknag.NagSuppressions_AddResourceSuppressions(provider, &[]*cdknag.NagPackSuppression{
			{
				Id:     jsii.String("AwsSolutions-IAM4"),
				Reason: jsii.String("CDK's autoDeleteObjects provider (non-retaining environments only) uses the AWS managed basic execution role; it is CDK's construct, not ours."),
			},
			{
				Id:     jsii.String("AwsSolutions-L1"),
				Reason: jsii.String("CDK's autoDeleteObjects provider picks its own Node.js runtime; it runs only on stack deletion."),
			},
		}, jsii.Bool(true))
	}
}

// IAM5Finding is how cdk-nag names a wildcard object resource of the
// bucket (logical id bucketID) in an IAM5 finding: pattern is the key
// pattern, such as "tasks/*".
func IAM5Finding(bucketID, pattern string) string {
	return "Resource::<" + bucketID + ".Arn>/" + pattern
}

// jsonString renders v as compact JSON with sorted keys.
func jsonString(v interface{}) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
