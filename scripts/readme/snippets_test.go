package readme

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository, two levels up from this package.
var root = filepath.Join("..", "..")

func readme(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Every Go block of the README is, word for word, a function of
// shared/worker/example_test.go, whose Example compiles and runs it.
func TestReadmeGoSnippetsAreExampleCode(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "shared", "worker", "example_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range Blocks(readme(t)) {
		if b.Info != "go" {
			continue
		}
		n++
		if !strings.Contains(string(src), b.Text) {
			t.Errorf("README.md:%d: this Go block is not in shared/worker/example_test.go (copy it there, or the change back):\n%s", b.Line, b.Text)
		}
	}
	if n < 2 {
		t.Errorf("README.md has %d Go blocks, want the client and the worker snippets", n)
	}
}

func TestBlocks(t *testing.T) {
	md := "a\n```sh runnable\necho 1\n\necho 2\n```\ntext\n```go\nx := 1\n```\n"
	got := Blocks(md)
	if len(got) != 2 || got[0].Text != "echo 1\n\necho 2\n" || !got[0].Runnable() || got[0].Line != 2 ||
		got[1].Info != "go" || got[1].Runnable() || got[1].Text != "x := 1\n" {
		t.Fatalf("Blocks = %+v", got)
	}
}

// Every relative link of the README and of docs/ names a file of the
// repository, and none of them points outside it.
func TestDocLinksResolve(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	files = append(files, filepath.Join(root, "README.md"), filepath.Join(root, "infra", "README.md"),
		filepath.Join(root, "clients", "python", "README.md"), filepath.Join(root, "clients", "typescript", "README.md"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if strings.Contains(text, "DESIGN") {
			t.Errorf("%s cites DESIGN, which is not part of the repository", f)
		}
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target, _, _ := strings.Cut(m[1], "#")
			if target == "" || strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path := filepath.Clean(filepath.Join(filepath.Dir(f), target))
			rel, err := filepath.Rel(root, path)
			if err != nil || strings.HasPrefix(rel, "..") {
				t.Errorf("%s links %s, outside the repository", f, m[1])
				continue
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links %s: %v", f, m[1], err)
			}
		}
	}
}

var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// No file of the repository cites DESIGN.md (or "DESIGN §"), which is not
// part of it: the docs, the code's comments and the OpenAPI document stand
// alone.
func TestNothingCitesADesignOutsideTheRepository(t *testing.T) {
	skip := map[string]bool{".git": true, ".bin": true, "dist": true, "cdk.out": true, "node_modules": true, "testdata": true}
	self, _ := filepath.Abs("snippets_test.go")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if skip[d.Name()] {
				return filepath.SkipDir
			}
			return nil
		}
		switch filepath.Ext(path) {
		case ".go", ".md", ".json", ".yml", ".yaml", "":
		default:
			return nil
		}
		if abs, _ := filepath.Abs(path); abs == self {
			return nil
		}
		if info, err := d.Info(); err != nil || info.Size() > 1<<20 {
			return err // no source or doc file is that large
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.Contains(line, "DESIGN.md") || strings.Contains(line, "DESIGN §") || strings.Contains(line, "DESIGN's") {
				t.Errorf("%s:%d cites DESIGN, which is not in the repository: %s", path, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
