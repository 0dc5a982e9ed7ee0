package deploy

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The CDK app compiles this package in its own module: an import outside
// the standard library (the AWS SDKs of the functions, the core) would
// follow it there.
func TestItImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		ast, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range ast.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if first, _, _ := strings.Cut(path, "/"); strings.Contains(first, ".") {
				t.Errorf("%s imports %s, outside the standard library", f, path)
			}
		}
	}
}

func TestTheTerminalTagIsItsKeyAndValue(t *testing.T) {
	if TerminalTag != "s3q-terminal=true" {
		t.Fatalf("TerminalTag = %q", TerminalTag)
	}
}
