// Package checktracked tests scripts/check-tracked, the check `make test`
// runs so that no build output is ever committed again: it is run on
// throw-away repositories holding each kind of file it must refuse.
package checktracked

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// script is scripts/check-tracked, relative to this package.
var script, _ = filepath.Abs("../check-tracked")

// repo makes a git repository holding files (path → content and mode), all
// added to the index, and returns its directory.
func repo(t *testing.T, files map[string]file) string {
	t.Helper()
	dir := t.TempDir()
	git(t, dir, "init", "-q")
	for path, f := range files {
		p := filepath.Join(dir, path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.body, f.mode); err != nil {
			t.Fatal(err)
		}
		git(t, dir, "add", "--", path)
		if f.mode&0o111 != 0 {
			git(t, dir, "update-index", "--chmod=+x", "--", path) // whatever core.fileMode says
		}
	}
	return dir
}

type file struct {
	body []byte
	mode os.FileMode
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// check runs the script on dir and returns its exit status and output.
func check(t *testing.T, dir string) (int, string) {
	t.Helper()
	cmd := exec.Command("bash", script, dir)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0, out.String()
}

// ok is what every repository below holds besides its one bad file.
func ok() map[string]file {
	return map[string]file{
		"README.md":         {[]byte("# hi\n"), 0o644},
		"main.go":           {[]byte("package main\n"), 0o644},
		"scripts/build":     {[]byte("#!/usr/bin/env bash\necho hi\n"), 0o755},
		"testdata/1mib.bin": {bytes.Repeat([]byte{'a'}, 1<<20), 0o644}, // exactly 1 MiB is allowed
	}
}

func TestCheckTracked(t *testing.T) {
	if code, out := check(t, repo(t, ok())); code != 0 {
		t.Fatalf("a clean repository fails (%d):\n%s", code, out)
	}
	elf := append([]byte{0x7f, 'E', 'L', 'F', 2, 1, 1}, make([]byte, 64)...)
	machO := append([]byte{0xcf, 0xfa, 0xed, 0xfe}, make([]byte, 64)...)
	for name, c := range map[string]struct {
		path string
		f    file
		say  string
	}{
		"over_1MiB":             {"data/big.json", file{bytes.Repeat([]byte{'x'}, 1<<20+1), 0o644}, "over 1 MiB"},
		"elf_binary":            {"s3q", file{elf, 0o755}, "compiled binary"},
		"elf_without_exec_bit":  {"dist/bootstrap", file{elf, 0o644}, "compiled binary"},
		"mach_o_binary":         {"bin/s3q-darwin", file{machO, 0o755}, "compiled binary"},
		"executable_not_script": {"tool.dat", file{[]byte("not a script\n"), 0o755}, "not a script"},
	} {
		t.Run(name, func(t *testing.T) {
			files := ok()
			files[c.path] = c.f
			code, out := check(t, repo(t, files))
			if code != 1 || !strings.Contains(out, c.path) || !strings.Contains(out, c.say) {
				t.Fatalf("exit %d, want 1 naming %s (%q):\n%s", code, c.path, c.say, out)
			}
		})
	}
}
