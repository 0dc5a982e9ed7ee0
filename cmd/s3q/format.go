package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// outputFormats are the values of -o/--output. Commands print text (for
// people: lists are aligned columns, so table is text) or JSON; yaml and
// id are made from the JSON a command prints (formatWriter).
var outputFormats = []string{"text", "table", "json", "yaml", "id"}

// formatWriter collects the JSON documents a command prints with -o json
// and, on flush, writes them as YAML documents or as the ids of the tasks
// (and schedules) they hold, one a line. Text that is not JSON passes
// through as it is.
type formatWriter struct {
	format string // yaml or id
	out    io.Writer
	buf    bytes.Buffer
}

func (w *formatWriter) Write(p []byte) (int, error) { return w.buf.Write(p) }

func (w *formatWriter) flush() error {
	dec := json.NewDecoder(bytes.NewReader(w.buf.Bytes()))
	dec.UseNumber()
	first := true
	for {
		var v node
		if err := dec.Decode(&v); err == io.EOF {
			return nil
		} else if err != nil {
			_, werr := w.out.Write(w.buf.Bytes()[dec.InputOffset():])
			return werr
		}
		switch w.format {
		case "yaml":
			if !first {
				fmt.Fprintln(w.out, "---")
			}
			if err := writeYAML(w.out, v); err != nil {
				return err
			}
		case "id":
			for _, id := range ids(v) {
				fmt.Fprintln(w.out, id)
			}
		}
		first = false
	}
}

// node is a JSON value that keeps the order of object keys.
type node struct {
	value any      // nil, bool, json.Number, string, []node, or *object
	keys  []string // object keys in order, when value is *object
}

type object map[string]node

func (n *node) UnmarshalJSON(b []byte) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	return n.decode(dec)
}

func (n *node) decode(dec *json.Decoder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '[' {
			var list []node
			for dec.More() {
				var c node
				if err := c.decode(dec); err != nil {
					return err
				}
				list = append(list, c)
			}
			n.value = list
		} else {
			obj := object{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return err
				}
				var c node
				if err := c.decode(dec); err != nil {
					return err
				}
				key := k.(string)
				obj[key] = c
				n.keys = append(n.keys, key)
			}
			n.value = &obj
		}
		_, err = dec.Token() // the closing delimiter
		return err
	default:
		n.value = t
	}
	return nil
}

// ids returns the ids a command's answer holds: {"task"}, {"tasks"},
// {"results":[{"task"}]}, {"schedule"}, {"schedules"}, {"queues"} (names).
func ids(v node) []string {
	obj, ok := v.value.(*object)
	if !ok {
		return nil
	}
	if id, ok := (*obj)["id"].value.(string); ok {
		return []string{id}
	}
	var out []string
	for _, k := range v.keys {
		c := (*obj)[k]
		switch k {
		case "task", "schedule":
			out = append(out, ids(c)...)
		case "tasks", "results", "schedules", "items":
			list, _ := c.value.([]node)
			for _, it := range list {
				out = append(out, ids(it)...)
			}
		case "queues":
			list, _ := c.value.([]node)
			for _, it := range list {
				if o, ok := it.value.(*object); ok {
					if name, ok := (*o)["name"].value.(string); ok {
						out = append(out, name)
					}
				}
			}
		}
	}
	return out
}

// writeYAML writes v (a node, or anything JSON can encode) as a YAML
// document.
func writeYAML(w io.Writer, v any) error {
	n, ok := v.(node)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		if err := json.Unmarshal(b, &n); err != nil {
			return err
		}
	}
	var b strings.Builder
	yamlNode(&b, n, 0, false)
	_, err := io.WriteString(w, b.String())
	return err
}

// yamlNode writes n at indent; inline says the line is already started
// (after "key:" or "- ").
func yamlNode(b *strings.Builder, n node, indent int, inline bool) {
	pad := strings.Repeat("  ", indent)
	switch v := n.value.(type) {
	case *object:
		if len(n.keys) == 0 {
			b.WriteString(sep(inline) + "{}\n")
			return
		}
		if inline {
			b.WriteString("\n")
		}
		for _, k := range n.keys {
			b.WriteString(pad + yamlString(k) + ":")
			yamlNode(b, (*v)[k], indent+1, true)
		}
	case []node:
		if len(v) == 0 {
			b.WriteString(sep(inline) + "[]\n")
			return
		}
		if inline {
			b.WriteString("\n")
		}
		for _, c := range v {
			b.WriteString(pad + "-")
			yamlNode(b, c, indent+1, true)
		}
	default:
		b.WriteString(sep(inline) + yamlScalar(v) + "\n")
	}
}

func sep(inline bool) string {
	if inline {
		return " "
	}
	return ""
}

func yamlScalar(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(v)
	case json.Number:
		return v.String()
	case string:
		return yamlString(v)
	}
	return fmt.Sprint(v)
}

// yamlString quotes a string unless it reads back as the same plain string.
func yamlString(s string) string {
	plain := s != "" && !strings.ContainsAny(s, ":#{}[],&*!|>'\"%@`\n\t\\") &&
		!strings.HasPrefix(s, " ") && !strings.HasSuffix(s, " ") && !strings.HasPrefix(s, "-") && !strings.HasPrefix(s, "?")
	if plain {
		switch strings.ToLower(s) {
		case "null", "~", "true", "false", "yes", "no", "on", "off", "y", "n":
			plain = false
		}
		if _, err := strconv.ParseFloat(s, 64); err == nil {
			plain = false
		}
	}
	if plain {
		return s
	}
	q, _ := json.Marshal(s) // a JSON string is a valid double-quoted YAML scalar
	return string(q)
}
