package openapitest

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
)

// What the checked answers covered, across the run of one test binary:
// the routes and statuses answered, and the properties of the document's
// schemas that some answer carried. A package whose tests reach every
// route (the API's) fails a property the document promises that no
// answer ever carried (Unseen); every package can report what it checked
// (Report).

var coverage = struct {
	sync.Mutex
	answers map[string]int  // "POST /queues/{queue}/tasks 201": answers checked
	codes   map[string]int  // "POST /queues/{queue}/tasks 409 conflict": error answers checked
	props   map[string]bool // "Task.expired_at": carried by some answer
}{answers: map[string]int{}, codes: map[string]int{}, props: map[string]bool{}}

// recordAnswer notes a checked answer of the operation key ("POST
// /queues/{queue}/tasks", or "(no route)") with status and its body, as
// the schema s describes it.
func recordAnswer(key string, status int, s *openapi3.SchemaRef, body []byte) {
	var v any
	if len(body) > 0 && json.Unmarshal(body, &v) != nil {
		return
	}
	coverage.Lock()
	defer coverage.Unlock()
	coverage.answers[key+" "+strconv.Itoa(status)]++
	if m, ok := v.(map[string]any); ok {
		e, _ := m["error"].(map[string]any)
		if code, ok := e["code"].(string); ok {
			coverage.codes[key+" "+strconv.Itoa(status)+" "+code]++
		}
	}
	if s != nil && v != nil {
		walk(s, v, "")
	}
}

// component is the name of the component schema r refers to, or "".
func component(r *openapi3.SchemaRef) string {
	name, _ := strings.CutPrefix(r.Ref, "#/components/schemas/")
	if name == r.Ref {
		return ""
	}
	return name
}

// walk marks the properties of v under the schema r, where comp is the
// component (with the property path within it) v is part of.
func walk(r *openapi3.SchemaRef, v any, comp string) {
	if r == nil || r.Value == nil {
		return
	}
	if name := component(r); name != "" {
		comp = name
	}
	s := r.Value
	for _, sub := range s.AllOf {
		walk(sub, v, comp)
	}
	for _, subs := range []openapi3.SchemaRefs{s.OneOf, s.AnyOf} {
		for _, sub := range subs {
			if sub.Value != nil && sub.Value.VisitJSON(v) == nil {
				walk(sub, v, comp)
				break
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, val := range v {
			p := s.Properties[k]
			if comp != "" && p != nil {
				coverage.props[comp+"."+k] = true
			}
			if p != nil {
				walk(p, val, comp+"."+k)
			}
		}
	case []any:
		for _, item := range v {
			walk(s.Items, item, comp)
		}
	}
}

// promised returns every property of the document's schemas named in
// names, as "Component.property", with the properties of the inline
// objects of their oneOf and allOf.
func promised(doc *openapi3.T, names []string) []string {
	var out []string
	var props func(comp string, s *openapi3.Schema)
	props = func(comp string, s *openapi3.Schema) {
		for k := range s.Properties {
			out = append(out, comp+"."+k)
		}
		for _, sub := range append(slices.Clone(s.OneOf), s.AllOf...) {
			if sub.Value != nil && component(sub) == "" {
				props(comp, sub.Value)
			}
		}
	}
	for _, name := range names {
		if s := doc.Components.Schemas[name]; s != nil && s.Value != nil {
			props(name, s.Value)
		}
	}
	sort.Strings(out)
	return slices.Compact(out)
}

// Unseen returns the properties of the components names (as
// "Component.property") that no answer checked so far carried, less
// those of allow: a property the document promises that the server
// never sent. A package calls it after its tests have run, when they
// ran in full.
func Unseen(doc *openapi3.T, names []string, allow map[string]string) []string {
	coverage.Lock()
	defer coverage.Unlock()
	var out []string
	for _, p := range promised(doc, names) {
		if !coverage.props[p] && allow[p] == "" {
			out = append(out, p)
		}
	}
	return out
}

// UnseenSuccesses returns the successful answers (2xx) of doc's
// operations, as "METHOD /path status", that no answer checked so far
// was, less those of allow.
func UnseenSuccesses(doc *openapi3.T, allow map[string]string) []string {
	coverage.Lock()
	defer coverage.Unlock()
	var out []string
	for pattern, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			for status := range op.Responses.Map() {
				key := method + " " + pattern + " " + status
				if strings.HasPrefix(status, "2") && coverage.answers[key] == 0 && allow[key] == "" {
					out = append(out, key)
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

// Seen reports whether some answer checked so far carried the property
// "Component.property".
func Seen(prop string) bool {
	coverage.Lock()
	defer coverage.Unlock()
	return coverage.props[prop]
}

// Report returns the answers checked so far, one line per route and
// status with its count, and one per route, status and error code,
// sorted.
func Report() string {
	coverage.Lock()
	defer coverage.Unlock()
	lines := make([]string, 0, len(coverage.answers)+len(coverage.codes))
	for _, m := range []map[string]int{coverage.answers, coverage.codes} {
		for k, n := range m {
			lines = append(lines, fmt.Sprintf("%s\t%d", k, n))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// WriteReport appends Report to the file $S3Q_OPENAPI_COVERAGE names,
// when it names one: how `make` sums what every package checked.
func WriteReport() error {
	path := os.Getenv("S3Q_OPENAPI_COVERAGE")
	if path == "" {
		return nil
	}
	r := Report()
	if r == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(r + "\n")
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// AnswerComponents returns the names of the component schemas some
// answer of doc may carry: those its responses refer to, directly or
// through other schemas.
func AnswerComponents(doc *openapi3.T) []string {
	found := map[string]bool{}
	var visit func(r *openapi3.SchemaRef)
	visit = func(r *openapi3.SchemaRef) {
		if r == nil || r.Value == nil {
			return
		}
		if name := component(r); name != "" {
			if found[name] {
				return
			}
			found[name] = true
		}
		s := r.Value
		for _, subs := range []openapi3.SchemaRefs{s.AllOf, s.OneOf, s.AnyOf} {
			for _, sub := range subs {
				visit(sub)
			}
		}
		for _, p := range s.Properties {
			visit(p)
		}
		visit(s.Items)
		if s.AdditionalProperties.Schema != nil {
			visit(s.AdditionalProperties.Schema)
		}
	}
	responses := []*openapi3.ResponseRef{}
	for _, item := range doc.Paths.Map() {
		for _, op := range item.Operations() {
			responses = append(responses, slices.Collect(maps.Values(op.Responses.Map()))...)
		}
	}
	for _, r := range doc.Components.Responses {
		responses = append(responses, r)
	}
	for _, r := range responses {
		if r.Value == nil {
			continue
		}
		for _, mt := range r.Value.Content {
			visit(mt.Schema)
		}
	}
	names := make([]string, 0, len(found))
	for n := range found {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
