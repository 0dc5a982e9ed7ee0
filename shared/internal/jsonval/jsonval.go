// Package jsonval checks JSON documents strictly and compares them by
// value.
//
// Check refuses what encoding/json lets through: bytes that are not UTF-8
// (json.Valid accepts them inside strings, and a json.RawMessage keeps
// them raw) and an object with the same key twice (json.Unmarshal keeps
// the last one silently, so two readers of one document may disagree on
// what it says).
//
// Canonical writes a document in one spelling per value: object keys
// sorted, no white space, strings escaped one way, and numbers by their
// exact decimal value (1, 1.0, 1e0 and 10e-1 are one number). Two
// documents are the same request when their canonical forms are equal;
// the form is for comparing and hashing, never for storing.
package jsonval

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Problem is what Check found wrong with a document.
type Problem struct {
	// Path is where, from the document's root: object keys and "[i]" for
	// array elements (for a repeated key, ending in that key); empty for
	// the document itself.
	Path []string
	// Message says what is wrong, for a person.
	Message string
}

func (p *Problem) Error() string {
	if len(p.Path) == 0 {
		return p.Message
	}
	return p.Message + " (at " + p.PathString() + ")"
}

// PathString spells Path as "a.b[2].c".
func (p *Problem) PathString() string {
	var sb strings.Builder
	for i, s := range p.Path {
		if i > 0 && !strings.HasPrefix(s, "[") {
			sb.WriteByte('.')
		}
		sb.WriteString(s)
	}
	return sb.String()
}

// maxDepth bounds the nesting Check and Canonical follow.
const maxDepth = 1000

// Check returns a *Problem when raw is not one valid JSON value, holds
// bytes that are not UTF-8, or has an object with a key twice; nil when
// it is fine.
func Check(raw []byte) error {
	if !utf8.Valid(raw) {
		// Find the top-level key that holds the bad bytes, for the path.
		return &Problem{Path: badUTF8Path(raw), Message: "is not valid UTF-8"}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := walk(dec, nil, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return &Problem{Message: "is not one JSON value (something follows it)"}
	}
	return nil
}

// badUTF8Path names the top-level key of an object whose value (or key)
// holds bytes that are not UTF-8; none when raw is not an object or the
// bytes are elsewhere.
func badUTF8Path(raw []byte) []string {
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !utf8.Valid(obj[k]) {
			return []string{k}
		}
	}
	return nil
}

// walk reads one value from dec, refusing repeated keys.
func walk(dec *json.Decoder, path []string, depth int) error {
	if depth > maxDepth {
		return &Problem{Path: path, Message: fmt.Sprintf("nests deeper than %d levels", maxDepth)}
	}
	tok, err := dec.Token()
	if err != nil {
		return syntaxProblem(path, err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	switch d {
	case '{':
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return syntaxProblem(path, err)
			}
			k, _ := kt.(string)
			if seen[k] {
				return &Problem{Path: append(path[:len(path):len(path)], k), Message: fmt.Sprintf("has the key %q twice", clipKey(k))}
			}
			seen[k] = true
			if err := walk(dec, append(path[:len(path):len(path)], k), depth+1); err != nil {
				return err
			}
		}
	case '[':
		for i := 0; dec.More(); i++ {
			if err := walk(dec, append(path[:len(path):len(path)], "["+strconv.Itoa(i)+"]"), depth+1); err != nil {
				return err
			}
		}
	}
	if _, err := dec.Token(); err != nil { // the closing delimiter
		return syntaxProblem(path, err)
	}
	return nil
}

func syntaxProblem(path []string, err error) error {
	if errors.Is(err, io.EOF) {
		return &Problem{Path: path, Message: "is not valid JSON (it ends early)"}
	}
	return &Problem{Path: path, Message: "is not valid JSON: " + strings.TrimPrefix(err.Error(), "json: ")}
}

func clipKey(k string) string {
	if len(k) > 64 {
		return k[:64] + "..."
	}
	return k
}

// Canonical returns raw in its canonical spelling (see the package doc),
// or an error when raw is not valid JSON. Repeated keys keep the last
// value, as encoding/json does: Check refuses them first.
func Canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	if err := write(&b, v, 0); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// Equal reports whether a and b are the same JSON value (both invalid
// counts as different). Empty means absent: two empty documents are equal.
func Equal(a, b []byte) bool {
	if len(bytes.TrimSpace(a)) == 0 || len(bytes.TrimSpace(b)) == 0 {
		return len(bytes.TrimSpace(a)) == len(bytes.TrimSpace(b))
	}
	ca, err := Canonical(a)
	if err != nil {
		return false
	}
	cb, err := Canonical(b)
	return err == nil && bytes.Equal(ca, cb)
}

func write(b *bytes.Buffer, v any, depth int) error {
	if depth > maxDepth {
		return fmt.Errorf("jsonval: nests deeper than %d levels", maxDepth)
	}
	switch x := v.(type) {
	case nil:
		b.WriteString("null")
	case bool:
		b.WriteString(strconv.FormatBool(x))
	case json.Number:
		n, err := number(string(x))
		if err != nil {
			return err
		}
		b.WriteString(n)
	case string:
		writeString(b, x)
	case []any:
		b.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := write(b, e, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		b.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k)
			b.WriteByte(':')
			if err := write(b, x[k], depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	default:
		return fmt.Errorf("jsonval: unexpected %T", v)
	}
	return nil
}

// writeString writes s as a JSON string, without encoding/json's HTML
// escapes, so a document already in that form keeps its bytes.
func writeString(b *bytes.Buffer, s string) {
	var sb bytes.Buffer
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	b.Write(bytes.TrimSuffix(sb.Bytes(), []byte("\n")))
}

// number spells a JSON number literal by its exact value: an integer of
// at most 21 digits as its digits ("-0" is "0"), anything else as
// "<digits>e<exponent>" with no leading or trailing zero in the digits
// ("1.50" is "15e-1"). No arithmetic on the exponent can blow up: it is
// kept as a big.Int.
func number(lit string) (string, error) {
	s := lit
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	mant, expPart, hasExp := strings.Cut(strings.ToLower(s), "e")
	exp := new(big.Int)
	if hasExp {
		if _, ok := exp.SetString(strings.TrimPrefix(expPart, "+"), 10); !ok {
			return "", fmt.Errorf("jsonval: bad number %q", lit)
		}
	}
	intPart, frac, _ := strings.Cut(mant, ".")
	digits := intPart + frac
	exp.Sub(exp, big.NewInt(int64(len(frac))))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "0", nil
	}
	trimmed := strings.TrimRight(digits, "0")
	exp.Add(exp, big.NewInt(int64(len(digits)-len(trimmed))))
	digits = trimmed
	sign := ""
	if neg {
		sign = "-"
	}
	if exp.Sign() >= 0 && exp.IsInt64() && int64(len(digits))+exp.Int64() <= 21 {
		return sign + digits + strings.Repeat("0", int(exp.Int64())), nil
	}
	return sign + digits + "e" + exp.String(), nil
}
