package main

import (
	"fmt"
	"sort"
)

// didYouMean returns ` (did you mean "X"?)` for the candidate closest to a
// mistyped word (subimt, craete), or "" when none is close.
func didYouMean[V any](word string, candidates map[string]V) string {
	names := make([]string, 0, len(candidates))
	for n := range candidates {
		names = append(names, n)
	}
	if best := closest(word, names); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// closest returns the name nearest to word, at most two edits away and
// fewer than half of word's letters, or "".
func closest(word string, names []string) string {
	sort.Strings(names)
	best, bestD := "", 3
	for _, n := range names {
		if d := editDistance(word, n); d < bestD && 2*d < len(word) {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (optimal string
// alignment) of a and b: an adjacent swap (craete) counts as one edit.
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
