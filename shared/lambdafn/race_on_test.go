//go:build race

package lambdafn_test

// raceOn is true when the race detector is on: code runs several times
// slower, so a test that runs a clock faster than real time runs it less
// fast.
const raceOn = true
