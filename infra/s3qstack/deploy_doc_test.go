package s3qstack

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
)

// deployGuide is docs/deploy.md, the guide a first-time deployer follows.
func deployGuide(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "deploy.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// makeTargets returns the targets the repository's Makefile defines.
func makeTargets(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^([a-zA-Z0-9_-]+)\s*:([^=]|$)`).FindAllStringSubmatch(string(b), -1) {
		out[m[1]] = true
	}
	return out
}

// Every `make X` the guide tells a reader to run is a target of the
// Makefile (in code blocks and in inline code).
func TestEveryMakeTargetTheDeployGuideNamesExists(t *testing.T) {
	guide := deployGuide(t)
	targets := makeTargets(t)
	var code []string
	for i, block := range strings.Split(guide, "```") {
		if i%2 == 1 {
			code = append(code, block) // a fenced block
		} else {
			for _, m := range regexp.MustCompile("`([^`\n]+)`").FindAllStringSubmatch(block, -1) {
				code = append(code, m[1])
			}
		}
	}
	named := map[string]bool{}
	for _, c := range code {
		for _, m := range regexp.MustCompile(`(?:^|[\s;&|(])make\s+([a-z][a-z0-9-]*)`).FindAllStringSubmatch(c, -1) {
			named[m[1]] = true
		}
	}
	if len(named) < 8 {
		t.Fatalf("read only %v from docs/deploy.md", named)
	}
	var missing []string
	for n := range named {
		if !targets[n] {
			missing = append(missing, n)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/deploy.md names make targets the Makefile does not have: %v", missing)
	}
	for _, must := range []string{"deploy", "destroy", "cdk-bootstrap", "diff"} {
		if !named[must] {
			t.Errorf("docs/deploy.md does not say `make %s`", must)
		}
	}
}

// guidePolicies reads the IAM policies of docs/deploy.md (its ```json
// blocks) by the Sid of their first statement.
func guidePolicies(t *testing.T) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, block := range strings.Split(deployGuide(t), "```json\n")[1:] {
		block, _, _ = strings.Cut(block, "```")
		var p struct {
			Statement []struct {
				Sid, Effect, Action string
				Resource            any
			}
		}
		if !strings.Contains(block, `"Statement"`) {
			continue // a settings snippet, not a policy
		}
		if err := json.Unmarshal([]byte(block), &p); err != nil || len(p.Statement) == 0 {
			t.Fatalf("docs/deploy.md: a policy that does not parse: %v\n%s", err, block)
		}
		for _, st := range p.Statement {
			if st.Effect != "Allow" || st.Action != "execute-api:Invoke" {
				t.Fatalf("policy %s: want only Allow execute-api:Invoke statements", st.Sid)
			}
			switch r := st.Resource.(type) {
			case string:
				out[p.Statement[0].Sid] = append(out[p.Statement[0].Sid], r)
			case []any:
				for _, x := range r {
					out[p.Statement[0].Sid] = append(out[p.Statement[0].Sid], x.(string))
				}
			}
		}
	}
	return out
}

// The guide's operator policy allows every route of the stack, on its API
// only; the reader's exactly the GET routes. Called as API Gateway
// authorizes: arn:aws:execute-api:{region}:{account}:{api}/{stage}/{METHOD}/{path},
// for queues a and b, with API_ID replaced by the deployment's API id.
func TestTheDeployGuidesOperatorPoliciesAgainstEveryRoute(t *testing.T) {
	policies := guidePolicies(t)
	const api = "abc123defg"
	want := map[string]func(method string) bool{
		"OperateS3q": func(string) bool { return true },
		"ReadS3q":    func(m string) bool { return m == "GET" },
	}
	for sid, allows := range want {
		resources, ok := policies[sid]
		if !ok {
			t.Fatalf("docs/deploy.md has no policy %s (have %v)", sid, policies)
		}
		allowed := func(arn string) bool {
			for _, r := range resources {
				if iamMatch(strings.ReplaceAll(r, "API_ID", api), arn) {
					return true
				}
			}
			return false
		}
		n, methods := 0, map[string]bool{}
		for _, fn := range Functions() {
			for _, key := range fn.Routes {
				method, pattern, _ := strings.Cut(key, " ")
				methods[method] = true
				for _, q := range []string{"a", "b"} {
					path := strings.NewReplacer("{queue}", q, "{id}", "0190a3c2-7b1e-7000-8000-000000000001", "{name}", "out.pdf").Replace(pattern)
					arn := "arn:aws:execute-api:eu-west-1:123456789012:" + api + "/$default/" + method + path
					if got := allowed(arn); got != allows(method) {
						t.Errorf("%s on %s: allowed %v, want %v", sid, key, got, allows(method))
					}
					other := "arn:aws:execute-api:eu-west-1:123456789012:zzz999zzzz/$default/" + method + path
					if allowed(other) {
						t.Errorf("%s allows %s on another API", sid, key)
					}
					n++
				}
			}
		}
		if n == 0 || !slices.Equal(sortedKeys(methods), []string{"DELETE", "GET", "POST", "PUT"}) {
			t.Errorf("routes checked: %d, methods %v", n, sortedKeys(methods))
		}
	}
}
