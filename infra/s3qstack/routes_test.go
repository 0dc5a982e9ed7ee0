package s3qstack

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// coreRoutes reads the route table the functions themselves serve
// (shared/lambdafn: a function answers 404 on a route that is not its own)
// from its source, so this module needs no dependency on the root one.
func coreRoutes(t *testing.T) map[string][]string {
	t.Helper()
	path := filepath.Join("..", "..", "shared", "lambdafn", "lambdafn.go")
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("no route table to compare with: %v", err)
	}
	consts := map[string]string{}
	var table *ast.CompositeLit
	ast.Inspect(f, func(n ast.Node) bool {
		spec, ok := n.(*ast.ValueSpec)
		if !ok {
			return true
		}
		for i, name := range spec.Names {
			if i >= len(spec.Values) {
				continue
			}
			switch v := spec.Values[i].(type) {
			case *ast.BasicLit:
				if s, err := strconv.Unquote(v.Value); err == nil {
					consts[name.Name] = s
				}
			case *ast.CompositeLit:
				if name.Name == "routes" {
					table = v
				}
			}
		}
		return true
	})
	if table == nil {
		t.Fatal("shared/lambdafn has no `routes` table any more; update this test")
	}
	out := map[string][]string{}
	for _, el := range table.Elts {
		kv := el.(*ast.KeyValueExpr)
		var fn string
		switch k := kv.Key.(type) {
		case *ast.Ident:
			fn = consts[k.Name]
		case *ast.BasicLit:
			fn, _ = strconv.Unquote(k.Value)
		}
		for _, r := range kv.Value.(*ast.CompositeLit).Elts {
			if lit, ok := r.(*ast.BasicLit); ok {
				s, _ := strconv.Unquote(lit.Value)
				out[fn] = append(out[fn], s)
			}
		}
	}
	return out
}

func TestEveryRouteAFunctionServesReachesThatFunction(t *testing.T) {
	core := coreRoutes(t)
	if len(core) == 0 {
		t.Fatal("read no routes from shared/lambdafn")
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
	// Routes the stack sends to a function that does not serve them (yet)
	// answer 404; worth knowing, not a failure while the API grows.
	for fn, routes := range stack {
		if _, known := core[fn]; !known {
			continue
		}
		for _, r := range routes {
			if !slices.Contains(core[fn], r) {
				t.Logf("the stack routes %q to %s, which does not serve it yet", r, fn)
			}
		}
	}
}
