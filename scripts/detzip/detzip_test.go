package main

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTwoZipsOfTheSameFilesAreIdentical(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("\x7fELF not really"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, b := filepath.Join(dir, "a.zip"), filepath.Join(dir, "b.zip")
	if err := write(a, dir, []string{"bootstrap"}); err != nil {
		t.Fatal(err)
	}
	// A different mtime on disk must not change the zip.
	if err := os.Chtimes(filepath.Join(dir, "bootstrap"), time.Now(), time.Now().Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := write(b, dir, []string{"bootstrap"}); err != nil {
		t.Fatal(err)
	}
	ab, _ := os.ReadFile(a)
	bb, _ := os.ReadFile(b)
	if !bytes.Equal(ab, bb) {
		t.Fatal("two zips of the same file differ")
	}
}

func TestTheBootstrapStaysExecutableWithAFixedTime(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("x"), 0o755); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "f.zip")
	if err := write(out, dir, []string{"bootstrap"}); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		t.Fatalf("%d entries", len(zr.File))
	}
	f := zr.File[0]
	if f.Name != "bootstrap" || f.Mode().Perm() != 0o755 || !f.Modified.Equal(fixedTime) {
		t.Fatalf("entry %s mode %v modified %v", f.Name, f.Mode(), f.Modified)
	}
}
