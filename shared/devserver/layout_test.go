package devserver

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/s3q/s3q/shared/queue"
)

// A data directory a dev server of an older build left (layout 2: the
// claim indexes under q/{queue}/ready/ and q/{queue}/deadline/) is
// refused at start, by both layout numbers, and left as it is.
func TestDevServerRefusesADataDirOfAnOlderLayout(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	st, err := openStore(ctx, Options{DataDir: dir, Bucket: DefaultBucket})
	if err != nil {
		t.Fatal(err)
	}
	marker := "q/default/ready/0/20260128T090000.000000Z_0196a7c8-0000-7000-8000-000000000001"
	for key, body := range map[string]string{
		queue.LayoutKey: `{"layout":2,"created_at":"2026-01-28T09:00:00Z"}`,
		marker:          "",
	} {
		if _, err := st.store.Put(ctx, key, []byte(body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.close(); err != nil {
		t.Fatal(err)
	}

	err = Run(ctx, Options{DataDir: dir, Addr: "127.0.0.1:0", Out: io.Discard, Logger: slog.New(slog.DiscardHandler)})
	if err == nil || !strings.Contains(err.Error(), "bucket has layout 2") || !strings.Contains(err.Error(), "this build uses layout 3") {
		t.Fatalf("a layout-2 data directory: %v", err)
	}

	st, err = openStore(ctx, Options{DataDir: dir, Bucket: DefaultBucket})
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	obj, err := st.store.Get(ctx, queue.LayoutKey)
	if err != nil || !strings.Contains(string(obj.Body), `"layout":2`) {
		t.Errorf("%s after the refusal: %s %v", queue.LayoutKey, obj.Body, err)
	}
	if _, err := st.store.Head(ctx, marker); err != nil {
		t.Errorf("the old marker after the refusal: %v", err)
	}
}
