package main

import (
	"bytes"
	"testing"
)

func TestYAMLKeepsKeyOrderAndQuotesWhatWouldReadBackOtherwise(t *testing.T) {
	var b bytes.Buffer
	w := &formatWriter{format: "yaml", out: &b}
	w.Write([]byte(`{"z":1,"a":{"list":[1,{"k":"v"},[]],"empty":{}},"s":["yes","1.5","a: b","-x","plain text",""," pad",null,true]}`))
	w.Write([]byte("\n" + `{"second":"doc"}` + "\n"))
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	want := `z: 1
a:
  list:
    - 1
    -
      k: v
    - []
  empty: {}
s:
  - "yes"
  - "1.5"
  - "a: b"
  - "-x"
  - plain text
  - ""
  - " pad"
  - null
  - true
---
second: doc
`
	if b.String() != want {
		t.Errorf("yaml:\n%s\nwant:\n%s", b.String(), want)
	}
}

func TestIDsFromEveryAnswerShape(t *testing.T) {
	var b bytes.Buffer
	w := &formatWriter{format: "id", out: &b}
	w.Write([]byte(`{"task":{"id":"t1"}} {"tasks":[{"id":"t2"},{"id":"t3"}],"next_cursor":"c"} {"results":[{"line":1,"task":{"id":"t4"}},{"line":2,"error":{"code":"x"}}]} {"queues":[{"name":"q1"}]} {"schedule":{"id":"s1"}}`))
	if err := w.flush(); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "t1\nt2\nt3\nt4\nq1\ns1\n" {
		t.Errorf("ids: %q", got)
	}
}
