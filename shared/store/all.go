package store

import (
	"context"
	"iter"
)

// All yields every object under prefix in key order, one List request
// per page of up to 1000. On a failed List it yields the error once and
// stops. Stopping the loop early sends no further request.
//
//	for it, err := range store.All(ctx, s, "tasks/") { ... }
func All(ctx context.Context, s Store, prefix string) iter.Seq2[Info, error] {
	return func(yield func(Info, error) bool) {
		after := ""
		for {
			page, err := s.List(ctx, prefix, after, 0)
			if err != nil {
				yield(Info{}, err)
				return
			}
			for _, it := range page.Items {
				if !yield(it, nil) {
					return
				}
			}
			if !page.Truncated || len(page.Items) == 0 {
				return
			}
			after = page.Items[len(page.Items)-1].Key
		}
	}
}

// AllVersions returns every version of key, newest first: the pages of
// s.Versions, one LIST each. Callers that answer a request page instead.
func AllVersions(ctx context.Context, s Store, key string) ([]Version, error) {
	var out []Version
	after := ""
	for {
		p, err := s.Versions(ctx, key, after, MaxListLimit)
		if err != nil {
			return nil, err
		}
		out = append(out, p.Versions...)
		if p.Next == "" || p.Next == after {
			return out, nil
		}
		after = p.Next
	}
}
