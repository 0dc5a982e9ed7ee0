// Package jsonpath reads a value out of decoded JSON by a dotted path, as
// tests of JSON answers name what they check: "tasks.0.task.id".
package jsonpath

import (
	"strconv"
	"strings"
)

// Get walks v, a value json.Unmarshal decoded into an any, by path: each
// dot-separated part is an object key or, in an array, an index. It
// returns nil where the path leads nowhere (a missing key, an index past
// the end or not a number, a part below a string or number).
func Get(v any, path string) any {
	for _, p := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[p]
		case []any:
			i, err := strconv.Atoi(p)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
