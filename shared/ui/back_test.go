package ui

import (
	"context"
	"testing"

	"github.com/s3q/s3q/shared/client"
)

// The page an action goes back to is a page of the console, whatever the
// form says: browsers drop tabs and newlines inside a URL, so "/\t/evil"
// would lead to //evil, another site, under a console served at "/".
func TestBackIsAlwaysAPageOfTheConsole(t *testing.T) {
	for _, prefix := range []string{"/ui", "/"} {
		c, err := New(context.Background(), "http://127.0.0.1:1", client.Options{}, Options{Prefix: prefix})
		if err != nil {
			t.Fatal(err)
		}
		home := c.Prefix() + "/"
		for _, s := range []string{"//evil.example", "/\\evil.example", home + "\t/evil.example", "/\t/evil.example", "/\x0b/evil.example",
			home + "\r\nSet-Cookie: x=1", "https://evil.example/", "javascript:alert(1)", home + "x\x00"} {
			if got := c.back(s); got != home {
				t.Errorf("prefix %q: back(%q) = %q, want %q", prefix, s, got, home)
			}
		}
		if got := c.back(home + "queues/default?status=failed"); got != home+"queues/default?status=failed" {
			t.Errorf("prefix %q: a page of the console: back = %q", prefix, got)
		}
	}
}
