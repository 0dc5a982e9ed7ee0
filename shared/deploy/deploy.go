// Package deploy holds what the stack (infra/s3qstack) and the functions
// it deploys must agree on, written once: the push bindings the stack's
// pushBindings setting hands the functions as S3Q_PUSH_BINDINGS, and the
// object tag of a terminal task record, by which the bucket's lifecycle
// rule deletes it. It imports nothing outside the standard library, so the
// CDK app (its own Go module) uses it without compiling the AWS SDKs the
// functions need.
package deploy

// Binding is what one queue may name as its push target. Names are
// compared exactly as written: a function bound by name is not bound by
// ARN or with a qualifier, and the reverse.
type Binding struct {
	// Lambda are the functions (names, name:alias or ARNs) the queue may
	// target, exactly as its declaration names them.
	Lambda []string `json:"lambda,omitempty"`
	// Secrets are the SSM parameters (names or ARNs) whose secret may sign
	// the queue's URL target, exactly as its declaration names them.
	Secrets []string `json:"secrets,omitempty"`
}

// Bindings are the bindings of each queue, by queue name: the JSON of the
// stack's pushBindings and of S3Q_PUSH_BINDINGS,
// {"orders": {"lambda": ["orders-handler"], "secrets": ["/s3q/orders/signing"]}}.
type Bindings map[string]Binding

// TerminalTagKey and TerminalTagValue are the object tag the core puts on
// a task record in a terminal status (completed, failed, cancelled,
// expired, archived) and on its status marker; the bucket's lifecycle
// rule (on q/, by this tag: a lifecycle filter cannot wildcard the queue)
// deletes them TerminalRetentionDays (a stack setting) after their last
// write. A retried task loses it on its next write.
const (
	TerminalTagKey   = "s3q-terminal"
	TerminalTagValue = "true"
)

// TerminalTag is the tag in S3's URL-query form, as a PUT's x-amz-tagging
// carries it: s3q-terminal=true.
const TerminalTag = TerminalTagKey + "=" + TerminalTagValue
