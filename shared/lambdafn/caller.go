package lambdafn

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

// caller is who made one HTTP request and how to find it again: API
// Gateway's request id (the requestId of the stage's access log), the
// Lambda invocation's id, and the IAM identity the SigV4 authorizer
// checked.
type caller struct {
	requestID       string // requestContext.requestId
	lambdaRequestID string // the invocation's AwsRequestID, when run by Lambda
	arn             string // requestContext.authorizer.iam.userArn
	account         string // requestContext.authorizer.iam.accountId
}

type callerKey struct{}

// withCaller returns ctx carrying the caller of event ev, for the one log
// line of its request.
func withCaller(ctx context.Context, ev events.APIGatewayV2HTTPRequest) context.Context {
	c := caller{requestID: ev.RequestContext.RequestID}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		c.lambdaRequestID = lc.AwsRequestID
	}
	if a := ev.RequestContext.Authorizer; a != nil && a.IAM != nil {
		c.arn, c.account = a.IAM.UserARN, a.IAM.AccountID
	}
	return context.WithValue(ctx, callerKey{}, c)
}

// callerHandler adds the caller of the request a record is logged for
// (request_id, lambda_request_id, caller_arn, caller_account) to every
// record logged with that request's context, so the API's line of each
// request says who changed which task. A request without an IAM identity
// (s3q dev) logs caller_arn "".
type callerHandler struct{ slog.Handler }

func (h callerHandler) Handle(ctx context.Context, r slog.Record) error {
	if c, ok := ctx.Value(callerKey{}).(caller); ok {
		r = r.Clone()
		r.AddAttrs(slog.String("request_id", c.requestID), slog.String("caller_arn", c.arn))
		if c.account != "" {
			r.AddAttrs(slog.String("caller_account", c.account))
		}
		if c.lambdaRequestID != "" {
			r.AddAttrs(slog.String("lambda_request_id", c.lambdaRequestID))
		}
	}
	return h.Handler.Handle(ctx, r)
}

func (h callerHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return callerHandler{h.Handler.WithAttrs(attrs)}
}

func (h callerHandler) WithGroup(name string) slog.Handler {
	return callerHandler{h.Handler.WithGroup(name)}
}
