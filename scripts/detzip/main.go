// Command detzip writes a reproducible zip: entries in the order given, each
// with a fixed modification time, mode 0755 for executables and 0644 for the
// rest, so the same inputs always give the same bytes (and the same CDK asset
// hash). Used by scripts/build-functions.
//
//	go run ./scripts/detzip -o dist/submit.zip -C dist/submit bootstrap
package main

import (
	"archive/zip"
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// fixedTime is the modification time of every entry (the zip format cannot
// store times before 1980).
var fixedTime = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

func main() {
	out := flag.String("o", "", "zip file to write")
	dir := flag.String("C", ".", "folder the entry names are relative to")
	flag.Parse()
	if *out == "" || flag.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "usage: detzip -o out.zip [-C dir] name...")
		os.Exit(2)
	}
	if err := write(*out, *dir, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "detzip:", err)
		os.Exit(1)
	}
}

func write(out, dir string, names []string) error {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, name := range names {
		path := filepath.Join(dir, name)
		info, err := os.Stat(path)
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		body, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if info.Mode()&0o111 != 0 {
			mode = 0o755
		}
		h := &zip.FileHeader{Name: filepath.ToSlash(name), Method: zip.Deflate, Modified: fixedTime}
		h.SetMode(mode)
		w, err := zw.CreateHeader(h)
		if err != nil {
			return err
		}
		if _, err := w.Write(body); err != nil {
			return err
		}
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}
