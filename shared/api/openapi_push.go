package api

import (
	"time"

	"github.com/s3q/s3q/shared/pushsig"
	"github.com/s3q/s3q/shared/queue"
	"github.com/s3q/s3q/shared/wire"
)

// The push delivery, as the document's webhooks describe it: what the
// dispatcher (package dispatch) POSTs to a queue's URL target, and what
// the target's answers do. The dispatch tests validate every delivery
// they receive against it.

// WebhookTaskDelivery is the name of the delivery in the document's
// webhooks.
const WebhookTaskDelivery = "taskDelivery"

// pushDelivery is the body of a delivery: dispatch.Payload's fields (a
// dispatch test compares them), declared here so that the API does not
// depend on the dispatcher.
type pushDelivery struct {
	Task     wire.Task   `json:"task"`
	Lease    queue.Lease `json:"lease"`
	Deadline time.Time   `json:"deadline"`
}

// signatureDescription says how S3q-Signature is made, exactly enough to
// implement a verifier in any language (docs/push.md says the same).
const signatureDescription = "`t=<Unix seconds>,v1=<64 lowercase hex digits>` (several `v1=` values while a secret is rotated: one matching is enough; " +
	"a receiver ignores other keys and spaces around parts). v1 is the HMAC-SHA256 keyed with the secret's raw UTF-8 bytes (the SSM parameter's value) " +
	"of the signed string: seven lines, each ended by one LF, then the body: the literal `v1`; t as written; the method `POST`; " +
	"the target URL exactly as the queue declares it (target.url, from the receiver's own configuration, not from the request); " +
	"the queue (the receiver's own: S3q-Queue only names the queue the sender meant); S3q-Task-Id; S3q-Attempt; then the body's exact bytes. " +
	"A receiver compares in constant time, refuses a t more than the tolerance (5 minutes) from now either way, and answers 401 when it fails. " +
	"docs/push.md states the algorithm and the order of checks; contract/push-signature-vectors.json has test vectors."

// webhooks are the document's webhooks: the push delivery.
func webhooks() obj {
	header := func(name, description string, schema obj) obj {
		return obj{"name": name, "in": "header", "required": true, "description": description, "schema": schema}
	}
	retryAfter := obj{"Retry-After": obj{"description": "seconds or an HTTP date: the task is available again then (at most 12 hours), else after the queue's backoff",
		"schema": obj{"type": "string"}}}
	return obj{WebhookTaskDelivery: obj{"post": obj{
		"operationId": "deliverTask",
		"tags":        []string{tagPush},
		"summary":     "A push queue's task, delivered to its URL target under a lease",
		"description": "The dispatcher claims each due task of a queue with a URL target and POSTs it, signed, under the claim's lease " +
			"(the queue's timeout). The target's answer decides the task: 2xx completes it with the body as its output (JSON as it is, other text as a JSON string); " +
			"429 and 5xx fail the attempt retryably (the task is available again after Retry-After when given, else after the queue's backoff; " +
			"the attempts spent, it is dead-lettered, status failed); any other status (a 3xx: redirects are not followed; another 4xx) fails the task without retry. " +
			"A target that has not answered by deadline is cut off and the lease lapses: the next claim delivers the next attempt. " +
			"A cancel requested while a delivery is in flight ends the request (the task is read every 2s; the target sees its connection closed) and the task ends cancelled. " +
			"Each attempt is delivered once, but a network or whoever captured it may repeat it: (S3q-Task-Id, S3q-Attempt) is the idempotency key. " +
			"A Lambda target is invoked with the same body, unsigned.",
		"parameters": []obj{
			header(pushsig.HeaderSignature, signatureDescription, obj{"type": "string", "pattern": `^t=[1-9][0-9]*(,v1=[0-9a-f]{64})+$`}),
			header(pushsig.HeaderQueue, "the queue the task is delivered from; the signature binds the receiver's own queue, so this header is not to be trusted on its own", queueName()),
			header(pushsig.HeaderTaskID, "the task's id", taskID()),
			header(pushsig.HeaderAttempt, "the attempt (task.attempt): a positive decimal, written canonically ([1-9][0-9]*)", obj{"type": "integer", "minimum": 1}),
		},
		"requestBody": obj{"required": true, "content": obj{"application/json": obj{"schema": ref("PushDelivery")}}},
		"responses": obj{
			"2XX": obj{"description": "completes the task: the body is its output (JSON as it is, other text as a JSON string; at most 256 KiB)"},
			"429": obj{"description": "fails the attempt retryably, available again after Retry-After when given", "headers": retryAfter},
			"4XX": obj{"description": "fails the task without retry (a 401 of a bad signature too)"},
			"5XX": obj{"description": "fails the attempt retryably, available again after Retry-After when given", "headers": retryAfter},
		},
		"security": []obj{{"pushSignature": []string{}}},
	}}}
}

// pushSignatureScheme is the security scheme of a delivery.
func pushSignatureScheme() obj {
	return obj{"type": "apiKey", "in": "header", "name": pushsig.HeaderSignature,
		"description": "The HMAC-SHA256 signature of a push delivery, with the target's secret: " + signatureDescription}
}
