package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/s3q/s3q/shared/internal/jsonval"
	"github.com/s3q/s3q/shared/queue"
)

// readBody reads a request body of at most max bytes; a longer one is a
// 413 and is not read further.
func readBody(r *http.Request, max int64) ([]byte, error) {
	if r.ContentLength > max {
		return nil, tooLarge(fieldBody, "the body is %d bytes, over the limit of %d bytes", r.ContentLength, max)
	}
	if r.Body == nil {
		return nil, nil
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, max+1))
	if err != nil {
		return nil, badInput(fieldBody, "the body could not be read: %v", err)
	}
	if int64(len(b)) > max {
		return nil, tooLarge(fieldBody, "the body is over the limit of %d bytes", max)
	}
	return b, nil
}

// fieldBody is the field of an error about the request body as a whole:
// one that is not JSON, not an object, or too large.
const fieldBody = "body"

// decodeObject decodes a JSON object into the struct dst points to,
// strictly: every key must be a field of dst (by its exact JSON name,
// embedded structs included), and a value that does not fit its field is
// an error naming that field. An empty body is the empty object. Field
// names in errors are prefixed with prefix (for batch items: "tasks[3].");
// an error about the whole document names prefix without its dot, or
// "body" when prefix is "".
func decodeObject(body []byte, dst any, prefix string) error {
	whole := wholeField(prefix)
	body = bytes.TrimSpace(body)
	if len(body) == 0 {
		return nil
	}
	if body[0] != '{' {
		if !json.Valid(body) {
			var v any
			return badInput(whole, "%s is not valid JSON: %s", wholeName(whole), jsonMessage(json.Unmarshal(body, &v)))
		}
		return badInput(whole, "%s must be a JSON object, not %s", wholeName(whole), jsonKind(body[0]))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil {
		return badInput(whole, "%s is not valid JSON: %s", wholeName(whole), jsonMessage(err))
	}
	v := reflect.ValueOf(dst).Elem()
	fields := fieldsOf(v.Type())
	rawItems := func(k string) bool {
		idx, ok := fields[k]
		return ok && v.Type().FieldByIndex(idx).Type == reflect.TypeFor[[]json.RawMessage]()
	}
	if err := checkValues(body, prefix, rawItems); err != nil {
		return err
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		idx, ok := fields[k]
		if !ok {
			if len(fields) == 0 {
				return badInput(keyField(prefix, k), "unknown field %q; this request takes no fields (send {} or no body)", clip(k))
			}
			return badInput(keyField(prefix, k), "unknown field %q; known fields: %s", clip(k), strings.Join(fieldNames(fields), ", "))
		}
		f := v.FieldByIndex(idx)
		if err := json.Unmarshal(obj[k], f.Addr().Interface()); err != nil {
			return badInput(prefix+k, "%s", valueMessage(prefix+k, f.Type(), obj[k], err))
		}
	}
	return nil
}

// checkValues refuses what encoding/json lets through in a request body
// (an object): a key given twice (json.Unmarshal keeps the last one, so
// two readers could see two requests) and bytes that are not UTF-8
// (kept raw in a json.RawMessage such as input), at any depth, naming
// the top-level field (prefixed with prefix) they are in. The fields
// rawItems names (an array of raw documents: a batch's tasks) are left
// to the decodeObject of each item, so one bad item fails alone.
func checkValues(body []byte, prefix string, rawItems func(key string) bool) error {
	whole := wholeField(prefix)
	dec := json.NewDecoder(bytes.NewReader(body))
	if _, err := dec.Token(); err != nil { // '{', as the caller checked
		return badInput(whole, "%s is not valid JSON: %s", wholeName(whole), jsonMessage(err))
	}
	seen := map[string]bool{}
	for dec.More() {
		kt, err := dec.Token()
		if err != nil {
			return badInput(whole, "%s is not valid JSON: %s", wholeName(whole), jsonMessage(err))
		}
		k, _ := kt.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return badInput(keyField(prefix, k), "the value of %q is not valid JSON: %s", prefix+clip(k), jsonMessage(err))
		}
		if seen[k] {
			return badInput(keyField(prefix, k), "the key %q is given twice", prefix+clip(k))
		}
		seen[k] = true
		if rawItems(k) {
			continue
		}
		if err := jsonval.Check(raw); err != nil {
			return badInput(keyField(prefix, k), "%s", strings.ToValidUTF8(err.Error(), "?"))
		}
	}
	return nil
}

// wholeField is the field of an error about a whole document decoded
// with prefix: "tasks[3]" for "tasks[3].", "body" for "".
func wholeField(prefix string) string {
	if prefix == "" {
		return fieldBody
	}
	return strings.TrimSuffix(prefix, ".")
}

// keyField is the field of an error about the key k of a document
// decoded with prefix: prefix+k, or, for the empty key (which a field
// could not name), the document itself: wholeField(prefix), or whole
// when given ("query" for a query string).
func keyField(prefix, k string, whole ...string) string {
	if k != "" {
		return prefix + clip(k)
	}
	if len(whole) > 0 {
		return whole[0]
	}
	return wholeField(prefix)
}

// wholeName names the document of field wholeField gave, in a message.
func wholeName(field string) string {
	if field == fieldBody {
		return "the request body"
	}
	return field
}

// jsonKind names the kind of JSON value that starts with c.
func jsonKind(c byte) string {
	switch c {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// valueMessage says, in one sentence naming field once, why raw does not
// fit a field of type t: `ttl must be a duration like "90s" or a number
// of seconds, not "soon"`.
func valueMessage(field string, t reflect.Type, raw json.RawMessage, err error) string {
	var te *json.UnmarshalTypeError
	what := jsonKind(raw[0])
	if what == "a number" && t == reflect.TypeFor[queue.Duration]() && !errors.As(err, &te) {
		return field + " " + jsonMessage(err) // a number of seconds out of range: its own words say how far
	}
	if raw[0] == '"' || what == "a number" {
		what = clip(string(raw))
	}
	return fmt.Sprintf("%s must be %s, not %s", field, kindName(t), what)
}

// jsonMessage says what is wrong with a JSON value, for a person.
func jsonMessage(err error) string {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		return fmt.Sprintf("want %s, not a JSON %s", kindName(te.Type), te.Value)
	case errors.As(err, &se):
		return fmt.Sprintf("%s (at byte %d)", strings.TrimPrefix(se.Error(), "json: "), se.Offset)
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// kindName names a Go type the way a JSON user thinks of it.
func kindName(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Time]():
		return "an RFC 3339 time string"
	case t == reflect.TypeFor[queue.Duration]():
		return `a duration like "90s" or a number of seconds`
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// fieldsOf maps the JSON names of a struct's fields (embedded structs'
// included) to their indexes. Fields tagged "-" are not settable.
var fieldCache sync.Map // reflect.Type -> map[string][]int

func fieldsOf(t reflect.Type) map[string][]int {
	if m, ok := fieldCache.Load(t); ok {
		return m.(map[string][]int)
	}
	m := map[string][]int{}
	addFields(t, nil, m)
	fieldCache.Store(t, m)
	return m
}

func addFields(t reflect.Type, index []int, m map[string][]int) {
	for i := range t.NumField() {
		f := t.Field(i)
		idx := append(slices.Clone(index), i)
		tag := f.Tag.Get("json")
		if tag == "-" || !f.IsExported() {
			continue // an unexported embedded struct's fields cannot be set by reflection
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			addFields(f.Type, idx, m)
			continue
		}
		if name == "" {
			name = f.Name
		}
		if _, dup := m[name]; !dup || len(idx) < len(m[name]) {
			m[name] = idx
		}
	}
}

func fieldNames(m map[string][]int) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// queryParams checks a query string against the parameters a route
// accepts: an unknown or repeated parameter is a 400.
func queryParams(q url.Values, accepted []string) (map[string]string, error) {
	out := make(map[string]string, len(q))
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(accepted, k) {
			if len(accepted) == 0 {
				return nil, badInput(keyField("", k, "query"), "unknown query parameter %q; this route takes none", clip(k))
			}
			return nil, badInput(keyField("", k, "query"), "unknown query parameter %q; known: %s", clip(k), strings.Join(accepted, ", "))
		}
		if len(q[k]) > 1 {
			return nil, badInput(keyField("", k, "query"), "query parameter %q is given %d times", clip(k), len(q[k]))
		}
		out[k] = q[k][0]
	}
	return out, nil
}

// waitFor checks a requested wait: absent or 0 is no wait; it must not be
// negative nor over max.
func waitFor(field string, d *queue.Duration, max time.Duration) (time.Duration, error) {
	if d == nil {
		return 0, nil
	}
	w := d.Std()
	if w < 0 || w > max {
		return 0, badInput(field, "must be between 0s and %s", queue.FormatDuration(max))
	}
	return w, nil
}

// clip shortens what a client sent for an error message.
func clip(s string) string {
	if len(s) > 64 {
		s = s[:64] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
