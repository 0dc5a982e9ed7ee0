// Package client speaks the s3q HTTP API from Go: the
// server's JSON in and out, errors as *Error values that match the queue's
// sentinels with errors.Is, and AWS SigV4 signing when the API is behind
// API Gateway with IAM auth.
package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/config"
)

// Options configure a Client. The zero value talks unsigned HTTP with
// http.DefaultClient, which is right for `s3q dev` on localhost.
type Options struct {
	// HTTPClient sends the requests. Defaults to a client with a 60s
	// timeout (longer than the longest long-poll).
	HTTPClient *http.Client
	// SigV4 signs every request for API Gateway IAM auth ("execute-api").
	// Defaults to true when the base URL's host ends in amazonaws.com.
	SigV4 *bool
	// Region for SigV4. Defaults to the region in an execute-api host
	// name, then the AWS config's region.
	Region string
	// Credentials for SigV4. Defaults to the AWS default credential chain.
	Credentials aws.CredentialsProvider
	// UserAgent is sent with every request. Defaults to "s3q-client".
	UserAgent string
	// MaxRetries is how many times a request that is safe to repeat
	// (submits, which always carry an id; lease operations; reads) is
	// sent again after a 503, another 5xx or a network error, with
	// capped, jittered exponential backoff (honouring Retry-After up to
	// the cap). Negative: never. Defaults to 4.
	MaxRetries int
	// RetryBackoff is the backoff before the first retry; it doubles each
	// time, up to 20 times it. Defaults to 200ms.
	RetryBackoff time.Duration
	// Queue is the queue the client's task, lease and schedule calls
	// address (/queues/{queue}/...), unless a request names its own; see
	// Client.In. Defaults to "default".
	Queue string
}

// DefaultQueue is the queue a client addresses unless told otherwise.
const DefaultQueue = "default"

// Client calls one s3q API. It is safe for concurrent use.
type Client struct {
	base   *url.URL
	http   *http.Client
	ua     string
	sign   bool
	region string
	creds  aws.CredentialsProvider
	signer *v4.Signer

	retries int
	backoff time.Duration
	queue   string
}

// New returns a client for the API at baseURL (e.g. http://127.0.0.1:8080
// or https://abc.execute-api.eu-west-1.amazonaws.com). Loading AWS
// credentials, when signing, uses ctx.
func New(ctx context.Context, baseURL string, opts Options) (*Client, error) {
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: base URL %q: want http(s)://host[:port][/stage]", baseURL)
	}
	c := &Client{base: u, http: opts.HTTPClient, ua: opts.UserAgent, region: opts.Region, creds: opts.Credentials, queue: opts.Queue}
	if c.queue == "" {
		c.queue = DefaultQueue
	}
	if c.http == nil {
		c.http = &http.Client{Timeout: 60 * time.Second}
	}
	if c.ua == "" {
		c.ua = "s3q-client"
	}
	c.retries, c.backoff = opts.MaxRetries, opts.RetryBackoff
	if c.retries == 0 {
		c.retries = 4
	}
	if c.backoff <= 0 {
		c.backoff = 200 * time.Millisecond
	}
	c.sign = strings.HasSuffix(u.Hostname(), ".amazonaws.com")
	if opts.SigV4 != nil {
		c.sign = *opts.SigV4
	}
	if c.sign {
		if c.region == "" {
			c.region = regionFromHost(u.Hostname())
		}
		if c.creds == nil || c.region == "" {
			cfg, err := config.LoadDefaultConfig(ctx)
			if err != nil {
				return nil, fmt.Errorf("client: load AWS config for SigV4: %w", err)
			}
			if c.creds == nil {
				c.creds = cfg.Credentials
			}
			if c.region == "" {
				c.region = cfg.Region
			}
		}
		if c.region == "" {
			return nil, errors.New("client: SigV4 needs a region: set Options.Region or AWS_REGION")
		}
		c.signer = v4.NewSigner()
	}
	return c, nil
}

// In returns a client like c whose calls address queue name. It shares
// c's HTTP client and credentials.
func (c *Client) In(name string) *Client {
	cc := *c
	cc.queue = name
	return &cc
}

// Queue returns the queue the client addresses.
func (c *Client) Queue() string { return c.queue }

// qpath returns the path of rest under the client's queue:
// /queues/{queue}{rest}.
func (c *Client) qpath(rest string) string { return queuePath(c.queue, rest) }

// taskPath returns the path of rest under task id of the client's queue:
// /queues/{queue}/tasks/{id}{rest}.
func (c *Client) taskPath(id, rest string) string {
	return c.qpath("/tasks/" + url.PathEscape(id) + rest)
}

// pageQuery is the query of one page: limit when above 0, cursor when set.
func pageQuery(limit int, cursor string) url.Values {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	return q
}

// queuePath returns /queues/{name}{rest}.
func queuePath(name, rest string) string { return "/queues/" + url.PathEscape(name) + rest }

// regionFromHost reads the region of {api}.execute-api.{region}.amazonaws.com.
func regionFromHost(host string) string {
	parts := strings.Split(host, ".")
	for i, p := range parts {
		if p == "execute-api" && i+1 < len(parts) {
			return parts[i+1]
		}
	}
	return ""
}

// errEncode marks a request body that could not be encoded.
var errEncode = errors.New("bad request body")

// do sends one request with a JSON body (nil for none) and decodes a JSON
// answer into out (nil to discard). It returns the HTTP status. A status
// of 400 or more is returned as an *Error.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	status, _, err := c.send(ctx, method, path, query, body, out)
	return status, err
}

// send is do, returning the answer's headers too.
func (c *Client) send(ctx context.Context, method, path string, query url.Values, body, out any) (int, http.Header, error) {
	var extra http.Header
	if wh, ok := body.(withHeader); ok {
		body, extra = wh.body, wh.header
	}
	var payload []byte
	if body != nil {
		var err error
		if payload, err = json.Marshal(body); err != nil {
			return 0, nil, fmt.Errorf("client: encode request: %w: %w", errEncode, err)
		}
	}
	u := *c.base
	u.Path = c.base.Path + path
	u.RawQuery = query.Encode()
	req, err := http.NewRequestWithContext(ctx, method, u.String(), bytes.NewReader(payload))
	if err != nil {
		return 0, nil, fmt.Errorf("client: %w", err)
	}
	for k, v := range extra {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", c.ua)
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.sign {
		creds, err := c.creds.Retrieve(ctx)
		if err != nil {
			return 0, nil, fmt.Errorf("client: AWS credentials: %w", err)
		}
		sum := sha256.Sum256(payload)
		if err := c.signer.SignHTTP(ctx, creds, req, hex.EncodeToString(sum[:]), "execute-api", c.region, time.Now()); err != nil {
			return 0, nil, fmt.Errorf("client: sign request: %w", err)
		}
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return resp.StatusCode, resp.Header, fmt.Errorf("client: read %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 400 {
		return resp.StatusCode, resp.Header, decodeError(resp, raw)
	}
	if out != nil && len(raw) > 0 && resp.StatusCode != http.StatusNoContent {
		if err := json.Unmarshal(raw, out); err != nil {
			return resp.StatusCode, resp.Header, fmt.Errorf("client: decode %s %s answer: %w", method, path, err)
		}
	}
	return resp.StatusCode, resp.Header, nil
}

// doRetry is do for a request that is safe to send again: it retries
// what retryable says may succeed later, up to Options.MaxRetries times,
// waiting a capped, jittered, doubling backoff (or the server's
// Retry-After, within the cap) between tries.
func (c *Client) doRetry(ctx context.Context, method, path string, query url.Values, body, out any) (int, error) {
	for n := 0; ; n++ {
		status, err := c.do(ctx, method, path, query, body, out)
		if err == nil || n >= c.retries || !retryable(ctx, err) {
			return status, err
		}
		if werr := c.wait(ctx, n, err); werr != nil {
			return status, err
		}
	}
}

// wait sleeps before retry n+1 (n from 0): uniformly in [d/2, d) with
// d = RetryBackoff·2^n capped at 20·RetryBackoff, or the Retry-After of
// err when longer (within the cap). It returns ctx's error if ctx ends.
func (c *Client) wait(ctx context.Context, n int, err error) error {
	maxD := 20 * c.backoff
	d := c.backoff << min(n, 16)
	if d > maxD || d <= 0 {
		d = maxD
	}
	d = d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
	var e *Error
	if errors.As(err, &e) && e.RetryAfter > d {
		d = min(e.RetryAfter, maxD)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryable reports whether a failed request may succeed if sent again:
// a network error (not the caller's own cancellation), 429, or a 5xx
// other than a 504 deadline_exceeded (a waited-for task's outcome).
func retryable(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var e *Error
	if errors.As(err, &e) {
		if e.Status == http.StatusGatewayTimeout && e.Code == "deadline_exceeded" {
			return false
		}
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests
	}
	return !errors.Is(err, errEncode) // a request that never left cannot be helped by a retry
}
