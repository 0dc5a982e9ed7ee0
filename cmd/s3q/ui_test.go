package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
)

// s3q ui serves the console of the API at --url on a loopback address
// until it is interrupted.
func TestUIServesTheConsoleUntilInterrupted(t *testing.T) {
	api := apiURL(t)
	ctx, cancel := context.WithCancel(context.Background())
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"ui", "--addr", "127.0.0.1:0", "--url", api}, strings.NewReader(""), outW, io.Discard)
		outW.Close()
	}()
	line, err := bufio.NewReader(outR).ReadString('\n')
	if err != nil {
		t.Fatalf("no banner: %v", err)
	}
	go io.Copy(io.Discard, outR)
	i := strings.LastIndex(line, "http://127.0.0.1:")
	if i < 0 || !strings.Contains(line, api) {
		t.Fatalf("banner %q", line)
	}
	u := strings.TrimSpace(line[i:])
	for path, want := range map[string]int{"": http.StatusOK, "ui/": http.StatusOK, "ui/dead": http.StatusOK, "ui/nope": http.StatusNotFound} {
		resp, err := http.Get(strings.TrimSuffix(u, "ui/") + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET /%s: %d, want %d", path, resp.StatusCode, want)
		}
	}
	cancel()
	if c := <-code; c != 0 {
		t.Errorf("exit %d after an interrupt", c)
	}
}

func TestUIRefusesArguments(t *testing.T) {
	if _, errOut, code := cli(t, "", "ui", "extra"); code != 2 || !strings.Contains(errOut, "no arguments") {
		t.Errorf("exit %d, %q", code, errOut)
	}
}
