package jsonpath

import (
	"encoding/json"
	"testing"
)

func TestGetWalksObjectsAndArrays(t *testing.T) {
	var v any
	if err := json.Unmarshal([]byte(`{"tasks":[{"task":{"id":"a","n":2}},{"task":null}],"s":"x"}`), &v); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]any{
		"tasks.0.task.id": "a", "tasks.0.task.n": float64(2), "s": "x",
		"tasks.1.task.id": nil, "tasks.2": nil, "tasks.-1": nil, "tasks.x": nil, "s.y": nil, "nope": nil,
	} {
		if got := Get(v, path); got != want {
			t.Errorf("Get(%q) = %v, want %v", path, got, want)
		}
	}
}
