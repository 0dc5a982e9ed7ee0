package storetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/s3q/s3q/shared/store"
)

// racers is how many goroutines race for one key.
const racers = 32

var raceCases = []testCase{
	{"concurrent_put_if_absent_on_one_key_has_exactly_one_winner", func(t testing.TB, s store.Store) {
		results := race(func(i int) (string, error) {
			return s.PutIfAbsent(t.Context(), "k", []byte(fmt.Sprint("racer-", i)))
		})
		winner := checkRace(t, "PutIfAbsent", results)
		if winner < 0 {
			t.Fatalf("PutIfAbsent: no racer won")
		}
		wantBody(t, s, "k", fmt.Sprint("racer-", winner), results[winner].etag)
	}},
	{"concurrent_put_if_match_with_one_etag_has_at_most_one_winner", func(t testing.TB, s store.Store) {
		etag := put(t, s, "k", "base")
		results := race(func(i int) (string, error) {
			return s.PutIfMatch(t.Context(), "k", []byte(fmt.Sprint("racer-", i)), etag)
		})
		if winner := checkRace(t, "PutIfMatch", results); winner >= 0 {
			wantBody(t, s, "k", fmt.Sprint("racer-", winner), results[winner].etag)
		} else {
			wantBody(t, s, "k", "base", etag)
		}
	}},
}

// raceResult is what one racer got.
type raceResult struct {
	etag string
	err  error
}

// race runs write from racers goroutines at once and returns their results
// by racer.
func race(write func(i int) (string, error)) []raceResult {
	results := make([]raceResult, racers)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			<-start
			etag, err := write(i)
			results[i] = raceResult{etag, err}
		})
	}
	close(start)
	wg.Wait()
	return results
}

// checkRace checks that at most one racer won and that every loser got
// ErrPrecondition (or ErrRetryable, as S3 answers 409 to a write that meets
// another in flight), and returns the winner, or -1.
func checkRace(t testing.TB, what string, results []raceResult) int {
	t.Helper()
	var winners []int
	for i, r := range results {
		switch {
		case r.err == nil:
			winners = append(winners, i)
		case !errors.Is(r.err, store.ErrPrecondition) && !errors.Is(r.err, store.ErrRetryable):
			t.Errorf("%s: racer %d error = %v, want ErrPrecondition or ErrRetryable", what, i, r.err)
		}
	}
	switch len(winners) {
	case 0:
		return -1
	case 1:
		return winners[0]
	}
	t.Fatalf("%s: %d of %d racers won (%v), want at most one", what, len(winners), len(results), winners)
	return -1
}
