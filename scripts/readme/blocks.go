// Package readme checks that the README runs as written: its Go snippets
// are compiled and run as example tests, and its shell walk-through is run
// against a fresh s3q dev (readme_test.go).
package readme

import (
	"strings"
)

// Block is one fenced code block of a Markdown file.
type Block struct {
	Info string // the fence's info string: "sh runnable", "go", ...
	Text string // the lines between the fences, each ending in \n
	Line int    // the line of the opening fence, from 1
}

// Blocks returns the fenced code blocks (``` fences) of a Markdown text.
func Blocks(md string) []Block {
	var out []Block
	var cur *Block
	for i, line := range strings.SplitAfter(md, "\n") {
		trimmed := strings.TrimRight(line, "\n")
		if cur == nil {
			if info, ok := strings.CutPrefix(trimmed, "```"); ok {
				cur = &Block{Info: strings.TrimSpace(info), Line: i + 1}
			}
			continue
		}
		if trimmed == "```" {
			out = append(out, *cur)
			cur = nil
			continue
		}
		cur.Text += trimmed + "\n"
	}
	return out
}

// Runnable says whether a block is part of the walk-through: its info
// string is "sh runnable".
func (b Block) Runnable() bool {
	f := strings.Fields(b.Info)
	return len(f) == 2 && f[0] == "sh" && f[1] == "runnable"
}
