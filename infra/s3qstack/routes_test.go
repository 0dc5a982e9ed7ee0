package s3qstack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// coreRoutes reads the route table the functions themselves serve (a
// function answers 404 on a route that is not its own) from the OpenAPI
// document generated from it, shared/api/openapi.json: each operation
// names its function in x-s3q-function. A test of shared/api fails when
// the document differs from the table, so this module needs no
// dependency on the root one and cannot drift from it.
func coreRoutes(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "api", "openapi.json"))
	if err != nil {
		t.Fatalf("no route table to compare with: %v", err)
	}
	var doc struct {
		Paths map[string]map[string]struct {
			Function string `json:"x-s3q-function"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("shared/api/openapi.json: %v", err)
	}
	out := map[string][]string{}
	for path, ops := range doc.Paths {
		for method, op := range ops {
			if op.Function == "" {
				t.Errorf("%s %s names no function (x-s3q-function)", method, path)
			}
			out[op.Function] = append(out[op.Function], strings.ToUpper(method)+" "+path)
		}
	}
	return out
}

// Every route of the API reaches the function that serves it, and the
// stack routes nothing else.
func TestEveryRouteAFunctionServesReachesThatFunction(t *testing.T) {
	core := coreRoutes(t)
	if len(core) == 0 {
		t.Fatal("read no routes from shared/api/openapi.json")
	}
	stack := map[string][]string{}
	for _, fn := range Functions() {
		stack[fn.Name] = fn.Routes
	}
	for fn, routes := range core {
		for _, r := range routes {
			if !slices.Contains(stack[fn], r) {
				t.Errorf("function %s serves %q but the stack does not route it there", fn, r)
			}
		}
	}
	for fn, routes := range stack {
		for _, r := range routes {
			if !slices.Contains(core[fn], r) {
				t.Errorf("the stack routes %q to %s, which does not serve it", r, fn)
			}
		}
	}
}

// iamPolicies reads the IAM policies of a page of docs/ (its ```json
// blocks), by the Sid of their first statement.
func iamPolicies(t *testing.T, page string) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", page))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, block := range strings.Split(string(b), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		var p struct {
			Statement []struct {
				Sid      string
				Effect   string
				Action   string
				Resource []string
			}
		}
		if err := json.Unmarshal([]byte(block), &p); err != nil || len(p.Statement) == 0 {
			continue
		}
		for _, st := range p.Statement {
			if st.Effect != "Allow" || st.Action != "execute-api:Invoke" {
				t.Fatalf("docs/%s policy %s: want only Allow execute-api:Invoke statements", page, st.Sid)
			}
			out[p.Statement[0].Sid] = append(out[p.Statement[0].Sid], st.Resource...)
		}
	}
	return out
}

// iamMatch matches an IAM resource pattern: * is any run of characters
// (slashes included), ? any one character.
func iamMatch(pattern, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(pattern)) + "$"
	return regexp.MustCompile(re).MatchString(s)
}

// The policies of docs/queues.md let one role only submit to queue a and another
// only work it (claim and the lease operations): every route of the stack,
// called for queue a and queue b, is allowed exactly where it should be.
// API Gateway authorizes a call as the ARN
// arn:aws:execute-api:{region}:{account}:{api}/{stage}/{METHOD}/{path}.
func TestReadmeIAMPoliciesScopeRolesToOneQueue(t *testing.T) {
	checkPolicies(t, "queues.md", map[string][]string{
		"SubmitToQueueA": {"POST /queues/{queue}/tasks", "POST /queues/{queue}/tasks/batch", "POST /queues/{queue}/tasks/wait"},
		"WorkQueueA": {
			"POST /queues/{queue}/claim", "POST /queues/{queue}/claim/wait", "POST /queues/{queue}/tasks/{id}/heartbeat", "POST /queues/{queue}/tasks/{id}/complete",
			"POST /queues/{queue}/tasks/{id}/fail", "POST /queues/{queue}/tasks/{id}/reschedule", "POST /queues/{queue}/tasks/{id}/cancel-ack",
		},
	})
}

// The policies of docs/operations.md: an operator of queue a reads it,
// pauses and resumes it and runs bulk retries, cancels and expiries, but
// does not purge; purging is a grant of its own. Neither reaches queue b,
// and the submit and work policies above reach none of these routes.
func TestOperationsIAMPoliciesSeparatePurge(t *testing.T) {
	checkPolicies(t, "operations.md", map[string][]string{
		"OperateQueueA": {
			"GET /queues/{queue}", "GET /queues/{queue}/stats", "POST /queues/{queue}/pause", "POST /queues/{queue}/resume",
			"POST /queues/{queue}/bulk/retry", "POST /queues/{queue}/bulk/cancel", "POST /queues/{queue}/bulk/expire",
			"GET /queues/{queue}/tasks", "GET /queues/{queue}/tasks/{id}", "GET /queues/{queue}/tasks/{id}/history",
			"GET /queues/{queue}/tasks/{id}/artifacts/{name}",
		},
		"PurgeQueueA": {"POST /queues/{queue}/purge"},
	})
}

// checkPolicies checks the policies of a page of docs/ by Sid: each
// allows exactly its routes, for queue a and no other, among every route
// of the stack.
func checkPolicies(t *testing.T, page string, want map[string][]string) {
	t.Helper()
	policies := iamPolicies(t, page)
	// Every ARN names one API and stage: a wildcard there would reach
	// queue a of every deployment the account can call.
	for sid, resources := range policies {
		for _, r := range resources {
			if !strings.HasPrefix(r, "arn:aws:execute-api:eu-west-1:123456789012:abc123defg/$default/") {
				t.Errorf("docs/%s %s: %s does not pin region, account, API id and stage", page, sid, r)
			}
		}
	}
	for sid, routes := range want {
		resources, ok := policies[sid]
		if !ok {
			t.Fatalf("docs/%s has no policy %s (have %v)", page, sid, policies)
		}
		allowed := func(arn string) bool {
			for _, r := range resources {
				if iamMatch(r, arn) {
					return true
				}
			}
			return false
		}
		seen := 0
		for _, fn := range Functions() {
			for _, key := range fn.Routes {
				method, pattern, _ := strings.Cut(key, " ")
				for _, q := range []string{"a", "b", "ab", "a-b"} {
					path := strings.NewReplacer("{queue}", q, "{id}", "0190a3c2-7b1e-7000-8000-000000000001", "{name}", "out.pdf").Replace(pattern)
					arn := "arn:aws:execute-api:eu-west-1:123456789012:abc123defg/$default/" + method + path
					wantAllowed := q == "a" && slices.Contains(routes, key)
					if got := allowed(arn); got != wantAllowed {
						t.Errorf("%s on %s (%s): allowed %v, want %v", sid, arn, key, got, wantAllowed)
					}
					if wantAllowed {
						seen++
					}
				}
			}
		}
		if seen != len(routes) {
			t.Errorf("%s: %d of its %d routes are routes of the stack", sid, seen, len(routes))
		}
	}
}
