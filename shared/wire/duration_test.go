package wire

import (
	"encoding/json"
	"testing"
	"time"
)

func TestParseDurationAcceptsDaysAndGoDurations(t *testing.T) {
	cases := map[string]time.Duration{
		"90s": 90 * time.Second, "30m": 30 * time.Minute, "1h": time.Hour, "7d": 7 * 24 * time.Hour,
		"1d12h": 36 * time.Hour, "1h30m": 90 * time.Minute, "0s": 0, "-1s": -time.Second, "250ms": 250 * time.Millisecond,
	}
	for in, want := range cases {
		got, err := ParseDuration(in)
		if err != nil || got != want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "d", "1x", "1d-2h", "h1", "3.5d", "abc"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestFormatDurationIsCompactAndRoundTrips(t *testing.T) {
	cases := map[time.Duration]string{
		7 * 24 * time.Hour: "7d", 36 * time.Hour: "1d12h", time.Hour: "1h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", 5 * time.Minute: "5m", 0: "0s", 250 * time.Millisecond: "250ms",
	}
	for d, want := range cases {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
		back, err := ParseDuration(want)
		if err != nil || back != d {
			t.Errorf("round trip %q = %v, %v", want, back, err)
		}
	}
}

func TestDurationJSONReadsStringsAndSeconds(t *testing.T) {
	var v struct{ D Duration }
	if err := json.Unmarshal([]byte(`{"D":"2h"}`), &v); err != nil || v.D.Std() != 2*time.Hour {
		t.Fatalf("string: %v %v", v.D, err)
	}
	if err := json.Unmarshal([]byte(`{"D":90}`), &v); err != nil || v.D.Std() != 90*time.Second {
		t.Fatalf("seconds: %v %v", v.D, err)
	}
	if err := json.Unmarshal([]byte(`{"D":"soon"}`), &v); err == nil {
		t.Fatal("accepted a bad duration")
	}
	for _, huge := range []string{`1e300`, `-1e300`, `9300000000000000000`} {
		if err := json.Unmarshal([]byte(`{"D":`+huge+`}`), &v); err == nil {
			t.Fatalf("accepted %s seconds (it overflows)", huge)
		}
	}
	b, _ := json.Marshal(v)
	if string(b) != `{"D":"1m30s"}` {
		t.Fatalf("marshal: %s", b)
	}
}
