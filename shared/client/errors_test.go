package client

import "testing"

func TestTemporaryIsFalseForAConflictNamingAField(t *testing.T) {
	cases := []struct {
		e    Error
		want bool
	}{
		{Error{Status: 409, Code: "conflict"}, true},                        // lost a race: retry later
		{Error{Status: 409, Code: "conflict", Field: "lease_token"}, false}, // the lease already ended
		{Error{Status: 409, Code: "conflict", Field: "id"}, false},          // an id another request made
		{Error{Status: 503, Code: "throttled"}, true},
		{Error{Status: 429, Code: "too_many_waits"}, true},
		{Error{Status: 504, Code: "deadline_exceeded"}, false},
		{Error{Status: 409, Code: "lease_expired"}, false},
	}
	for _, c := range cases {
		if got := c.e.Temporary(); got != c.want {
			t.Errorf("%+v: Temporary() = %v, want %v", c.e, got, c.want)
		}
	}
}
