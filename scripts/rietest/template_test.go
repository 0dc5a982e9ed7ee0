//go:build rie

package rietest

import (
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strconv"
)

// fnSpec is what the synthesized template says about one function: the
// settings Lambda would run it with.
type fnSpec struct {
	Name         string // s3q's name: submit, claim, ...
	FunctionName string // s3q-<env>-<name>
	Runtime      string
	Handler      string
	Architecture string
	MemoryMB     int
	TimeoutS     int
	// Env is the function's environment; a value that refers to another
	// resource of the stack ({"Ref": ...}) is the resource's stand-in here
	// (resolve).
	Env map[string]string
}

// refs are the stand-ins of the stack's resources a function's environment
// may refer to, by resource type: the local bucket, the event bus's name,
// a function's name.
type refs struct {
	bucket string
}

// readTemplate reads every AWS::Lambda::Function of the template at path
// whose name starts with prefix ("s3q-dev-"), by s3q name.
func readTemplate(path, prefix string, r refs) (map[string]fnSpec, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the synthesized template: %w (make infra-test writes it)", err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	resolve := func(v any) (string, error) {
		switch x := v.(type) {
		case string:
			return x, nil
		case float64:
			return strconv.FormatFloat(x, 'f', -1, 64), nil
		case map[string]any:
			id, ok := x["Ref"].(string)
			if !ok || len(x) != 1 {
				return "", fmt.Errorf("%v: only a Ref to the bucket, the bus or a function has a local stand-in", x)
			}
			res, ok := tpl.Resources[id]
			if !ok {
				return "", fmt.Errorf("Ref %s: no such resource", id)
			}
			switch res.Type {
			case "AWS::S3::Bucket":
				return r.bucket, nil
			case "AWS::Events::EventBus":
				if n, ok := res.Properties["Name"].(string); ok {
					return n, nil
				}
			case "AWS::Lambda::Function":
				if n, ok := res.Properties["FunctionName"].(string); ok {
					return n, nil
				}
			}
			return "", fmt.Errorf("Ref %s (%s): no local stand-in", id, res.Type)
		}
		return "", fmt.Errorf("%v: not a string or a Ref", v)
	}
	out := map[string]fnSpec{}
	for id, res := range tpl.Resources {
		if res.Type != "AWS::Lambda::Function" {
			continue
		}
		p := res.Properties
		fname, _ := p["FunctionName"].(string)
		if len(fname) <= len(prefix) || fname[:len(prefix)] != prefix {
			continue // CDK's own helper functions
		}
		s := fnSpec{Name: fname[len(prefix):], FunctionName: fname, Env: map[string]string{}}
		s.Runtime, _ = p["Runtime"].(string)
		s.Handler, _ = p["Handler"].(string)
		if a, ok := p["Architectures"].([]any); ok && len(a) == 1 {
			s.Architecture, _ = a[0].(string)
		}
		if m, ok := p["MemorySize"].(float64); ok {
			s.MemoryMB = int(m)
		}
		if t, ok := p["Timeout"].(float64); ok {
			s.TimeoutS = int(t)
		}
		vars, _ := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		for k, v := range vars {
			val, err := resolve(v)
			if err != nil {
				return nil, fmt.Errorf("%s (%s) %s: %w", fname, id, k, err)
			}
			s.Env[k] = val
		}
		out[s.Name] = s
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no function named %s*", path, prefix)
	}
	return out, nil
}

// envList is spec's environment plus extra as KEY=VALUE, sorted.
func envList(spec fnSpec, extra map[string]string) []string {
	m := map[string]string{}
	for k, v := range spec.Env {
		m[k] = v
	}
	for k, v := range extra {
		m[k] = v
	}
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
