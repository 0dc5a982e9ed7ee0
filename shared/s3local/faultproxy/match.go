package faultproxy

import (
	"fmt"
	"net/http"
	"strings"
)

// Match selects requests by method, object key and write condition.
type Match struct {
	// Method is the HTTP method ("PUT"); empty matches any.
	Method string
	// Key is a pattern of the object key after Options.KeyPrefix, in which
	// "*" matches any run of characters, "/" included ("tasks/*"); empty
	// matches any request, a bucket-level one (a LIST) included.
	Key string
	// Cond is "create" (If-None-Match), "cas" (If-Match), "plain" (neither)
	// or empty (any).
	Cond string
}

// ParseMatch parses "METHOD KEY [COND]", such as "PUT tasks/*" or
// "PUT dedup/* create"; "*" as the method matches any method, and "" any
// request.
func ParseMatch(pattern string) (Match, error) {
	f := strings.Fields(pattern)
	var m Match
	if len(f) > 3 {
		return m, fmt.Errorf("faultproxy: match %q: want METHOD KEY [create|cas|plain]", pattern)
	}
	if len(f) > 0 && f[0] != "*" {
		m.Method = strings.ToUpper(f[0])
	}
	if len(f) > 1 {
		m.Key = f[1]
	}
	if len(f) > 2 {
		switch f[2] {
		case "create", "cas", "plain":
			m.Cond = f[2]
		default:
			return m, fmt.Errorf("faultproxy: match %q: condition %q is not create, cas or plain", pattern, f[2])
		}
	}
	return m, nil
}

// matches reports whether the request with this method, key (after the
// prefix; isKey false when the request names no object under the prefix)
// and header matches m.
func (m Match) matches(method, key string, isKey bool, h http.Header) bool {
	if m.Method != "" && m.Method != method {
		return false
	}
	if m.Key != "" && (!isKey || !glob(m.Key, key)) {
		return false
	}
	return m.Cond == "" || m.Cond == cond(h)
}

// glob matches s against pattern, in which "*" matches any run of
// characters.
func glob(pattern, s string) bool {
	parts := strings.Split(pattern, "*")
	if len(parts) == 1 {
		return pattern == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}
