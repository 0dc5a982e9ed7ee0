// Package clip shortens strings quoted in messages, so that a long input
// cannot make an error message (or a record holding one) long.
package clip

// InputBytes is how many bytes of user input an error message quotes.
const InputBytes = 80

// Input returns s, user input quoted in an error message, cut to
// InputBytes with "..." when it is longer.
func Input(s string) string { return String(s, InputBytes) }

// String returns s cut to n bytes with "..." when it is longer.
func String(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
