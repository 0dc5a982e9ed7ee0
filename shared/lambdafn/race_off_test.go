//go:build !race

package lambdafn_test

// raceOn is true when the race detector is on (race_on_test.go).
const raceOn = false
