package lambdafn

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

func TestEMF(t *testing.T) {
	var buf bytes.Buffer
	e := &emfWriter{w: &buf}
	before := snapshot{"S3Get": {2, unitCount}, "FlushBytes": {100, unitBytes}, "Flat": {7, unitCount}}
	after := snapshot{"S3Get": {5, unitCount}, "FlushBytes": {300, unitBytes}, "Flat": {7, unitCount}, "New": {1, unitCount}}
	start := time.UnixMilli(1764500000000)
	err := e.write(emfRecord{function: "fetch", start: start, duration: 1500 * time.Microsecond, coldStart: true,
		metrics: snapshot{"Status4xx": {1, unitCount}}, properties: map[string]any{"requestId": "r1", "status": 404}},
		before, after)
	if err != nil {
		t.Fatal(err)
	}
	line := buf.Bytes()
	if bytes.Count(line, []byte("\n")) != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("not one line: %q", line)
	}
	var m map[string]any
	if err := json.Unmarshal(line, &m); err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"S3Get": 3, "FlushBytes": 200, "New": 1, "Invocations": 1, "Errors": 0, "ColdStarts": 1,
		"Duration": 1.5, "Status4xx": 1}
	aws := m["_aws"].(map[string]any)
	if aws["Timestamp"] != float64(1764500000000) {
		t.Fatalf("timestamp %v", aws["Timestamp"])
	}
	dir := aws["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if dir["Namespace"] != "tierlog" {
		t.Fatalf("namespace %v", dir["Namespace"])
	}
	if dims := dir["Dimensions"].([]any); len(dims) != 1 || dims[0].([]any)[0] != "Function" || m["Function"] != "fetch" {
		t.Fatalf("dimensions %v, Function %v", dims, m["Function"])
	}
	defs := dir["Metrics"].([]any)
	if len(defs) != len(want) {
		t.Fatalf("metrics %v, want %v", defs, want)
	}
	units := map[string]string{"FlushBytes": "Bytes", "Duration": "Milliseconds"}
	for _, d := range defs {
		d := d.(map[string]any)
		name := d["Name"].(string)
		if v, ok := want[name]; !ok || m[name] != v {
			t.Errorf("metric %s = %v, want %v", name, m[name], want[name])
		}
		u := units[name]
		if u == "" {
			u = "Count"
		}
		if d["Unit"] != u {
			t.Errorf("metric %s unit %v, want %s", name, d["Unit"], u)
		}
	}
	if _, ok := m["Flat"]; ok {
		t.Error("a counter that did not move is reported")
	}
	if m["requestId"] != "r1" || m["status"] != float64(404) {
		t.Errorf("properties: %v", m)
	}
}

func TestOpMetric(t *testing.T) {
	for in, want := range map[string]string{"put_if_absent": "PutIfAbsent", "get": "Get", "": ""} {
		if got := opMetric(in); got != want {
			t.Errorf("%q: %q, want %q", in, got, want)
		}
	}
}
