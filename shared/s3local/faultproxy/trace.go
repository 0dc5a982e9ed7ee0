package faultproxy

import "net/http"

// Entry is one request a trace saw.
type Entry struct {
	// Method is the HTTP method.
	Method string
	// Key is the object key after Options.KeyPrefix; empty for a request
	// that names no object under it (a LIST).
	Key string
	// Cond is "create" (If-None-Match), "cas" (If-Match) or "plain".
	Cond string
	// Fault is what the proxy did to the request.
	Fault Fault
}

// Pattern returns the Match pattern of requests like e: "METHOD KEY COND".
func (e Entry) Pattern() string { return e.Method + " " + e.Key + " " + e.Cond }

// IsConditionalWrite reports whether e is a create-only or
// compare-and-swap PUT.
func (e Entry) IsConditionalWrite() bool { return e.Method == http.MethodPut && e.Cond != "plain" }

// IsWrite reports whether e is a PUT or a DELETE of an object.
func (e Entry) IsWrite() bool {
	return e.Key != "" && (e.Method == http.MethodPut || e.Method == http.MethodDelete)
}

// StartTrace starts recording every request, dropping what an earlier
// trace recorded.
func (p *Proxy) StartTrace() {
	p.mu.Lock()
	p.tracing, p.trace = true, nil
	p.mu.Unlock()
}

// StopTrace stops recording and returns the requests recorded since
// StartTrace, in the order they arrived.
func (p *Proxy) StopTrace() []Entry {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := p.trace
	p.tracing, p.trace = false, nil
	return t
}
