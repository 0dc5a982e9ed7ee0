package lambdafntest

import (
	"encoding/json"

	"github.com/aws/aws-lambda-go/events"
)

// APIEvent is the API Gateway HTTP API event (payload format 2.0) of a
// request with a JSON body, as the HTTP functions receive it: what a test
// or a benchmark sends one without going through API Gateway. Its route
// key is $default: the function matches the route from method and path.
func APIEvent(method, path, body string) []byte {
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: "$default", RawPath: path, Body: body,
		Headers: map[string]string{"content-type": "application/json"},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: method, Path: path},
		},
	}
	b, _ := json.Marshal(ev)
	return b
}
