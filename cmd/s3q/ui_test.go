package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
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
	if i < 0 || !strings.Contains(line, api) || !strings.Contains(line, "/ui/?token=") {
		t.Fatalf("banner %q, want the console's URL with its token", line)
	}
	u := strings.TrimSpace(line[i:])
	base, token, _ := strings.Cut(u, "ui/?token=")
	// Without the token: 401, on every path.
	for _, path := range []string{"", "ui/", "ui/dead"} {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("GET /%s without the token: %d, want 401", path, resp.StatusCode)
		}
	}
	if resp, err := http.Get(base + "ui/?token=wrong"); err != nil || resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a wrong token: %v %v", resp, err)
	}
	// The printed URL sets the cookie; then every page opens with it.
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	resp, err := browser.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || strings.Contains(resp.Request.URL.String(), token) {
		t.Errorf("the printed URL: %d at %s, want 200 without the token in the address", resp.StatusCode, resp.Request.URL)
	}
	for path, want := range map[string]int{"": http.StatusOK, "ui/": http.StatusOK, "ui/dead": http.StatusOK, "ui/nope": http.StatusNotFound} {
		resp, err := browser.Get(base + path)
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

// An address other hosts can reach is refused without a token.
func TestUIRefusesANonLoopbackAddressWithoutAToken(t *testing.T) {
	_, errOut, code := cli(t, "http://127.0.0.1:1", "ui", "--addr", "0.0.0.0:0", "--no-token")
	if code != 2 || !strings.Contains(errOut, "--no-token refused") || !strings.Contains(errOut, "reachable from other hosts") {
		t.Errorf("ui --addr 0.0.0.0:0 --no-token (%d): %s", code, errOut)
	}
}
