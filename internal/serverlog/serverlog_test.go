package serverlog

import (
	"fmt"
	"strings"
	"testing"
)

func TestFollowReportsTheFirstServingLineAndKeepsTheNewest(t *testing.T) {
	var log strings.Builder
	log.WriteString("not json\n")
	log.WriteString(`{"msg":"Serving","game":"127.0.0.1:1","http":"127.0.0.1:2"}` + "\n")
	log.WriteString(`{"msg":"Serving","game":"127.0.0.1:3","http":"127.0.0.1:4"}` + "\n")
	for i := range 5 {
		fmt.Fprintf(&log, "line %d\n", i)
	}
	tail, serving := NewTail(3), make(chan Addrs, 1)
	tail.Follow(strings.NewReader(log.String()), serving)
	if got := <-serving; got != (Addrs{Game: "127.0.0.1:1", HTTP: "127.0.0.1:2"}) {
		t.Errorf("serving = %+v, want the first line's addresses", got)
	}
	if got := tail.String(); got != "line 2\nline 3\nline 4" {
		t.Errorf("tail = %q, want the newest 3 lines", got)
	}
}

func TestServingIgnoresOtherLines(t *testing.T) {
	for _, line := range []string{"", "Serving", `{"msg":"Serving the join API","address":"x"}`, `{"msg":"serving"}`} {
		if addrs, ok := Serving([]byte(line)); ok {
			t.Errorf("Serving(%q) = %+v, true", line, addrs)
		}
	}
}
