package main

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// TestCLIHeadersAndTimestamps: produce -H and --timestamp on a
// create-time topic, read back by consume as JSON lines and through the
// %h, %H and %T template fields, in JSON and binary.
func TestCLIHeadersAndTimestamps(t *testing.T) {
	skipShort(t, "tierlog serve and the tierlog binary")
	s := startServer(t, t.TempDir())
	u := "--url=" + s.url
	mustCLI(t, nil, "topics", "create", "ev", "--timestamp-type", "create", u)
	for _, mode := range [][]string{nil, {"--binary"}} {
		mustCLI(t, []byte("a\nb\n"), append([]string{"produce", "-t", "ev", "-p", "0", "-H", "trace-id=abc", "-H", "trace-id", "-H", "empty=", "-H", "eq=x=y",
			"--timestamp", "2026-12-02T03:55:00Z", u}, mode...)...)
		mustCLI(t, []byte("c\n"), append([]string{"produce", "-t", "ev", "-p", "0", "--timestamp", "1000", u}, mode...)...)
	}
	for _, mode := range [][]string{nil, {"--binary"}} {
		out := mustCLI(t, nil, append([]string{"consume", "-t", "ev", "-p", "0", "-e", "--format", "json", u}, mode...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if len(lines) != 6 {
			t.Fatalf("%v: %d lines: %s", mode, len(lines), out)
		}
		type header struct {
			Key   string  `json:"key"`
			Value *string `json:"value"`
		}
		str := func(s string) *string { return &s }
		wantH := []header{{"trace-id", str("abc")}, {"trace-id", nil}, {"empty", str("")}, {"eq", str("x=y")}}
		for i, l := range lines {
			var r struct {
				Value     string   `json:"value"`
				Timestamp int64    `json:"timestamp"`
				Headers   []header `json:"headers"`
			}
			if err := json.Unmarshal([]byte(l), &r); err != nil {
				t.Fatal(err)
			}
			switch i % 3 {
			case 2:
				if r.Value != "c" || r.Timestamp != 1000 || r.Headers != nil || strings.Contains(l, "headers") {
					t.Errorf("%v line %d: %s", mode, i, l)
				}
			default:
				if r.Timestamp != 1796183700000 || !reflect.DeepEqual(r.Headers, wantH) {
					t.Errorf("%v line %d: %s", mode, i, l)
				}
			}
		}
		// -J: kcat's envelope, headers a flat list, tstype of the topic.
		kc := strings.Split(strings.TrimSpace(mustCLI(t, nil, append([]string{"consume", "-t", "ev", "-p", "0", "-e", "-J", u}, mode...)...)), "\n")
		wantKcat := []string{
			`{"topic":"ev","partition":0,"offset":0,"tstype":"create","ts":1796183700000,"broker":-1,"headers":["trace-id","abc","trace-id",null,"empty","","eq","x=y"],"key":null,"payload":"a"}`,
			`{"topic":"ev","partition":0,"offset":2,"tstype":"create","ts":1000,"broker":-1,"key":null,"payload":"c"}`,
		}
		if len(kc) != 6 || kc[0] != wantKcat[0] || kc[2] != wantKcat[1] {
			t.Errorf("%v -J:\n%s\nwant lines 0 and 2:\n%s", mode, strings.Join(kc, "\n"), strings.Join(wantKcat, "\n"))
		}
		got := mustCLI(t, nil, append([]string{"consume", "-t", "ev", "-p", "0", "-c", "3", "-f", `%s %T %H [%h]\n`, u}, mode...)...)
		want := "a 1796183700000 4 [trace-id=abc,trace-id,empty=,eq=x=y]\nb 1796183700000 4 [trace-id=abc,trace-id,empty=,eq=x=y]\nc 1000 0 []\n"
		if got != want {
			t.Errorf("%v template:\n got %q\nwant %q", mode, got, want)
		}
	}
	// An append-time topic refuses --timestamp; bad flags are usage errors.
	mustCLI(t, nil, "topics", "create", "clock", u)
	if r := cli(t, []byte("x\n"), "produce", "-t", "clock", "--timestamp", "5", u); r.code == 0 || !strings.Contains(r.stderr, "timestamp") {
		t.Errorf("--timestamp on an append-time topic: exit %d, stderr %s", r.code, r.stderr)
	}
	for _, args := range [][]string{{"-H", "=v"}, {"--timestamp", "yesterday"}, {"--timestamp", "-1"}} {
		if r := cli(t, []byte("x\n"), append([]string{"produce", "-t", "ev", u}, args...)...); r.code != 2 {
			t.Errorf("produce %v: exit %d, want 2 (usage); stderr %s", args, r.code, r.stderr)
		}
	}
}
