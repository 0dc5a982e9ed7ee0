package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress draws a one-line bar on a terminal stream: "[####    ] 40/100".
// Elsewhere (a pipe, a file, a CI log) it writes the bar once, at the end,
// rather than a carriage return per batch.
type progress struct {
	w     io.Writer
	tty   bool
	total int
	n     int
	label string
	start time.Time
}

func newProgress(w io.Writer, total int, label string) *progress {
	p := &progress{w: w, tty: isTerminal(w), total: total, label: label, start: time.Now()}
	if p.tty {
		p.draw()
	}
	return p
}

// isTerminal says whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func (p *progress) add(n int) {
	p.n += n
	if p.tty {
		p.draw()
	}
}

func (p *progress) draw() {
	const width = 30
	filled := width
	if p.total > 0 {
		filled = width * p.n / p.total
	}
	rate := float64(p.n) / time.Since(p.start).Seconds()
	cr := ""
	if p.tty {
		cr = "\r"
	}
	fmt.Fprintf(p.w, "%s%s [%s%s] %d/%d (%.0f/s)", cr, p.label, strings.Repeat("#", filled), strings.Repeat(" ", width-filled), p.n, p.total, rate)
}

func (p *progress) done() {
	if !p.tty {
		p.draw()
	}
	fmt.Fprintln(p.w)
}
