package figures

import (
	"slices"
	"testing"
)

func TestProgramRunsTheFiguresOnlyNames(t *testing.T) {
	all := Program("t", "")
	some := Program("t", "api,push")
	for figure, want := range map[string]bool{"api": true, "push": true, "pus": false, "throughput": false} {
		if !all(figure) {
			t.Errorf("no -only: %s does not run", figure)
		}
		if some(figure) != want {
			t.Errorf("-only api,push: %s runs %v, want %v", figure, some(figure), want)
		}
	}
}

func TestCountsAndProfilesReadTheirLists(t *testing.T) {
	if got := Counts(" 1,4 ,16"); !slices.Equal(got, []int{1, 4, 16}) {
		t.Errorf("Counts: %v", got)
	}
	ps := Profiles("none, typical")
	if len(ps) != 2 || ps[0].Name != "none" || ps[1].Name != "typical" {
		t.Errorf("Profiles: %v", ps)
	}
}
