package lambdafn

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/s3q/s3q/shared/api"
)

// EventError is why no request can be made from an event: Field names the
// event's field at fault, in its JSON spelling ("body", "rawPath").
type EventError struct {
	Field   string
	Message string
}

func (e *EventError) Error() string { return e.Message }

// RequestFromEvent makes the http.Request an API Gateway HTTP API event
// (payload format 2.0) stands for: method from requestContext.http.method
// (else from routeKey), path from rawPath (else requestContext.http.path),
// query from rawQueryString (else queryStringParameters), headers and
// cookies, and the body, base64-decoded when isBase64Encoded. An event
// from which no request can be made is an *EventError.
func RequestFromEvent(ctx context.Context, ev events.APIGatewayV2HTTPRequest) (*http.Request, error) {
	method := ev.RequestContext.HTTP.Method
	if method == "" {
		method, _, _ = strings.Cut(ev.RouteKey, " ")
	}
	path := ev.RawPath
	if path == "" {
		path = ev.RequestContext.HTTP.Path
	}
	if method == "" || path == "" {
		return nil, &EventError{Field: "rawPath", Message: "the event names no method or path (requestContext.http.method, rawPath)"}
	}
	target := path
	switch {
	case ev.RawQueryString != "":
		target += "?" + ev.RawQueryString
	case len(ev.QueryStringParameters) > 0:
		q := url.Values{}
		for k, v := range ev.QueryStringParameters {
			q.Set(k, v)
		}
		target += "?" + q.Encode()
	}
	u, err := url.ParseRequestURI(target)
	if err != nil {
		return nil, &EventError{Field: "rawPath", Message: fmt.Sprintf("the event's path is not a URL path: %v", err)}
	}
	body := []byte(ev.Body)
	if ev.IsBase64Encoded {
		if body, err = base64.StdEncoding.DecodeString(ev.Body); err != nil {
			return nil, &EventError{Field: "body", Message: "the event's body is not base64 though isBase64Encoded is set"}
		}
	}
	r, err := http.NewRequestWithContext(ctx, method, "http://lambda/", bytes.NewReader(body))
	if err != nil {
		return nil, &EventError{Field: "requestContext.http.method", Message: fmt.Sprintf("the event's method %q is not an HTTP method", method)}
	}
	r.URL, r.RequestURI = u, u.RequestURI()
	r.Host = ev.RequestContext.DomainName
	r.RemoteAddr = ev.RequestContext.HTTP.SourceIP
	for k, v := range ev.Headers {
		r.Header.Set(k, v)
	}
	if len(ev.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(ev.Cookies, "; "))
	}
	r.ContentLength = int64(len(body))
	return r, nil
}

// EventFromRequest makes the API Gateway HTTP API event (payload format
// 2.0) that API Gateway would send for r, reading at most maxBody+1 bytes
// of its body (so that an API limited to maxBody still sees a body too
// large as such). The route key is the API route r matches, or "$default".
// It is how the dev server hands net/http requests to the Lambda handlers.
func EventFromRequest(r *http.Request, maxBody int64) (events.APIGatewayV2HTTPRequest, error) {
	var body []byte
	if r.Body != nil {
		var err error
		if body, err = io.ReadAll(io.LimitReader(r.Body, maxBody+1)); err != nil {
			return events.APIGatewayV2HTTPRequest{}, err
		}
	}
	routeKey, ok := api.Match(r.Method, r.URL.Path)
	if !ok {
		routeKey = "$default"
	}
	now := time.Now().UTC()
	ev := events.APIGatewayV2HTTPRequest{
		Version:        "2.0",
		RouteKey:       routeKey,
		RawPath:        r.URL.EscapedPath(),
		RawQueryString: r.URL.RawQuery,
		Headers:        map[string]string{},
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			RouteKey:   routeKey,
			AccountID:  "000000000000",
			Stage:      "$default",
			RequestID:  rand.Text(),
			APIID:      "s3q-dev",
			DomainName: r.Host,
			Time:       now.Format("02/Jan/2006:15:04:05 -0700"),
			TimeEpoch:  now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{
				Method:    r.Method,
				Path:      r.URL.Path,
				Protocol:  r.Proto,
				SourceIP:  sourceIP(r.RemoteAddr),
				UserAgent: r.UserAgent(),
			},
		},
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				ev.Cookies = append(ev.Cookies, strings.Split(v, "; ")...)
			}
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	if q := r.URL.Query(); len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	// The path parameters, as API Gateway fills them: {queue}, {id}, {name}.
	if _, pattern, ok := strings.Cut(routeKey, " "); ok && strings.Contains(pattern, "{") {
		pat, segs := strings.Split(pattern, "/"), strings.Split(r.URL.Path, "/")
		if len(pat) == len(segs) {
			ev.PathParameters = map[string]string{}
			for i, p := range pat {
				if name, ok := strings.CutPrefix(p, "{"); ok {
					ev.PathParameters[strings.TrimSuffix(name, "}")] = segs[i]
				}
			}
		}
	}
	if utf8.Valid(body) {
		ev.Body = string(body)
	} else {
		ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
	}
	return ev, nil
}

// sourceIP is the host part of a RemoteAddr.
func sourceIP(addr string) string {
	if i := strings.LastIndexByte(addr, ':'); i > 0 {
		return strings.Trim(addr[:i], "[]")
	}
	return addr
}

// quote returns s as a JSON string.
func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
