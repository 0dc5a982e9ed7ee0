package jsonval

import (
	"strings"
	"testing"
)

func TestCheckRefusesRepeatedKeysAtAnyDepth(t *testing.T) {
	for _, tc := range []struct{ doc, path string }{
		{`{"a":1,"a":2}`, "a"},
		{`{"x":{"b":1,"c":{"d":1,"d":1}}}`, "x.c.d"},
		{`[{"k":1},{"k":1,"k":2}]`, "[1].k"},
	} {
		err := Check([]byte(tc.doc))
		p, ok := err.(*Problem)
		if !ok || !strings.Contains(p.Message, "twice") || p.PathString() != tc.path {
			t.Errorf("Check(%s) = %v, want a repeated key at %q", tc.doc, err, tc.path)
		}
	}
	for _, doc := range []string{`{"a":1,"b":{"a":1}}`, `[{"a":1},{"a":2}]`, `"a"`, `12`, `{}`, `null`} {
		if err := Check([]byte(doc)); err != nil {
			t.Errorf("Check(%s) = %v, want nil", doc, err)
		}
	}
}

func TestCheckRefusesInvalidUTF8AndNamesTheKey(t *testing.T) {
	err := Check([]byte("{\"ok\":\"x\",\"input\":{\"s\":\"\xff\"}}"))
	p, ok := err.(*Problem)
	if !ok || p.PathString() != "input" || !strings.Contains(p.Message, "UTF-8") {
		t.Fatalf("Check = %v, want invalid UTF-8 at input", err)
	}
	if err := Check([]byte("\"\xc3\"")); err == nil {
		t.Fatal("Check of a bad string = nil")
	}
}

func TestCheckRefusesTrailingDataAndBadSyntax(t *testing.T) {
	for _, doc := range []string{`{"a":1} {}`, `{"a":`, `[1,]`, `{"a" 1}`} {
		if err := Check([]byte(doc)); err == nil {
			t.Errorf("Check(%s) = nil, want an error", doc)
		}
	}
}

func TestCanonicalIgnoresKeyOrderSpaceAndNumberSpelling(t *testing.T) {
	same := [][2]string{
		{`{"a":1,"b":2}`, `{ "b" : 2, "a" : 1 }`},
		{`{"n":1}`, `{"n":1.0}`},
		{`{"n":1}`, `{"n":1e0}`},
		{`{"n":100}`, `{"n":1e2}`},
		{`{"n":0.5}`, `{"n":5e-1}`},
		{`{"n":0}`, `{"n":-0.0}`},
		{`{"n":1.50}`, `{"n":15E-1}`},
		{`{"s":"<&>"}`, `{"s":"\u003c\u0026\u003e"}`},
		{`[1,{"z":[true,null],"a":"x"}]`, `[1.0,{"a":"x","z":[true,null]}]`},
	}
	for _, p := range same {
		if !Equal([]byte(p[0]), []byte(p[1])) {
			a, _ := Canonical([]byte(p[0]))
			b, _ := Canonical([]byte(p[1]))
			t.Errorf("%s and %s differ: %s vs %s", p[0], p[1], a, b)
		}
	}
	differ := [][2]string{
		{`{"n":1}`, `{"n":"1"}`},
		{`{"n":1}`, `{"n":10}`},
		{`{"n":12345678901234567890123}`, `{"n":12345678901234567890124}`},
		{`[1,2]`, `[2,1]`},
		{`{"a":1}`, `{"a":1,"b":null}`},
		{`{"n":-1}`, `{"n":1}`},
	}
	for _, p := range differ {
		if Equal([]byte(p[0]), []byte(p[1])) {
			t.Errorf("%s and %s are equal, want different", p[0], p[1])
		}
	}
}

func TestCanonicalKeepsCompactSortedDocumentsAsTheyAre(t *testing.T) {
	for _, doc := range []string{`{"a":1,"b":[1,2,"x"]}`, `{"n":1,"s":"<é>"}`, `[]`, `"x"`} {
		c, err := Canonical([]byte(doc))
		if err != nil || string(c) != doc {
			t.Errorf("Canonical(%s) = %s, %v", doc, c, err)
		}
	}
}

func TestHugeExponentsAreCheap(t *testing.T) {
	c, err := Canonical([]byte(`[1e1000000000000, 10e999999999999]`))
	if err != nil || string(c) != `[1e1000000000000,1e1000000000000]` {
		t.Fatalf("Canonical = %s, %v", c, err)
	}
}
