package lambdafn_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// events/README.md lists every sample event once, with the function the
// tests send it to and, for an HTTP event, the route key it carries, so
// that the table cannot drift from the files.
func TestEventsREADMEListsEveryEvent(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(eventsDir, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	functionOf := map[string]string{
		"sweep-expired.json": "sweep-expired", "schedule-tick.json": "schedule-tick",
		"dispatch.json": "dispatch", "dispatch-wake.json": "dispatch",
	}
	for _, c := range eventCases {
		functionOf[c.file] = c.function
	}
	row := regexp.MustCompile("(?m)^\\| `([^`]+\\.json)` \\| ([a-z-]+) \\| ([^|]+) \\| ([^|\\n]+) \\|$")
	listed := map[string]int{}
	for _, m := range row.FindAllStringSubmatch(string(readme), -1) {
		file, function, trigger := m[1], m[2], strings.TrimSpace(m[3])
		listed[file]++
		raw, err := os.ReadFile(filepath.Join(eventsDir, file))
		if err != nil {
			t.Errorf("README lists %s: %v", file, err)
			continue
		}
		if want := functionOf[file]; function != want {
			t.Errorf("README says %s goes to %s; the tests send it to %q", file, function, want)
		}
		var ev struct {
			RouteKey string `json:"routeKey"`
		}
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Errorf("%s: %v", file, err)
		}
		if ev.RouteKey != "" && trigger != "`"+ev.RouteKey+"`" {
			t.Errorf("README gives %s the route %s; the event carries %q", file, trigger, ev.RouteKey)
		}
		if strings.TrimSpace(m[4]) == "" {
			t.Errorf("README does not say what %s is for", file)
		}
	}
	files, err := filepath.Glob(filepath.Join(eventsDir, "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no events: %v", err)
	}
	for _, f := range files {
		if n := listed[filepath.Base(f)]; n != 1 {
			t.Errorf("README lists events/%s %d times, want once", filepath.Base(f), n)
		}
	}
}
