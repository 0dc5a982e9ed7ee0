package main

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// progress draws a one-line bar on a terminal stream: "[####    ] 40/100".
type progress struct {
	w     io.Writer
	total int
	n     int
	label string
	start time.Time
}

func newProgress(w io.Writer, total int, label string) *progress {
	p := &progress{w: w, total: total, label: label, start: time.Now()}
	p.draw()
	return p
}

func (p *progress) add(n int) {
	p.n += n
	p.draw()
}

func (p *progress) draw() {
	const width = 30
	filled := width
	if p.total > 0 {
		filled = width * p.n / p.total
	}
	rate := float64(p.n) / time.Since(p.start).Seconds()
	fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d (%.0f/s)", p.label, strings.Repeat("#", filled), strings.Repeat(" ", width-filled), p.n, p.total, rate)
}

func (p *progress) done() { fmt.Fprintln(p.w) }
