package client

import (
	"context"
	"net/http"
	"net/url"
)

// Call sends one request to any route of the API, such as one this
// client has no method for yet, with a JSON body (nil for none), and
// decodes a JSON answer into out (nil to discard). path starts with "/"
// ("/queues/emails/stats"). It returns the HTTP status; a status of 400
// or more is an *Error. A GET is retried as reads are (Options.MaxRetries);
// any other method is sent once.
func (c *Client) Call(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	if query == nil {
		query = url.Values{}
	}
	if method == http.MethodGet {
		return c.doRetry(ctx, method, path, query, body, out)
	}
	return c.do(ctx, method, path, query, body, out)
}
