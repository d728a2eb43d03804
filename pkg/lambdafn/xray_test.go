//go:build !noxray

package lambdafn

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/xray"
)

var segmentName = regexp.MustCompile(`"name":"([^"]+)"`)

// daemon is a fake X-Ray daemon: it collects the (sub)segment names the
// SDK sends over UDP.
func daemon(t *testing.T) net.PacketConn {
	t.Helper()
	c, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := xray.Configure(xray.Config{DaemonAddr: c.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	return c
}

// segments reads datagrams until every name in want was seen or 5 s pass.
func segments(c net.PacketConn, want ...string) map[string]int {
	seen := map[string]int{}
	deadline := time.Now().Add(5 * time.Second)
	buf := make([]byte, 64<<10)
	for {
		done := true
		for _, w := range want {
			done = done && seen[w] > 0
		}
		if done {
			return seen
		}
		_ = c.SetReadDeadline(deadline)
		n, _, err := c.ReadFrom(buf)
		if err != nil {
			return seen
		}
		for _, m := range segmentName.FindAllSubmatch(buf[:n], -1) {
			seen[string(m[1])]++
		}
	}
}

// sampled returns a Lambda invocation context with a sampled trace, as the
// Lambda runtime makes it from Lambda-Runtime-Trace-Id.
func sampled() context.Context {
	id := fmt.Sprintf("%024x", time.Now().UnixNano())
	header := fmt.Sprintf("Root=1-%08x-%s;Parent=%016x;Sampled=1", time.Now().Unix(), id[len(id)-24:], time.Now().UnixNano())
	//lint:ignore SA1029 the key aws-lambda-go and the X-Ray SDK use
	return context.WithValue(lambdaCtx(), xray.LambdaTraceHeaderKey, header)
}

func TestXRaySubsegments(t *testing.T) {
	awsEnv(t)
	t.Setenv("AWS_XRAY_CONTEXT_MISSING", "RUNTIME_ERROR") // overridden: must not panic
	hot := t.TempDir()
	produce, _ := newFunction(t, "produce", hot, nil)
	comp, _ := newFunction(t, "compactor", hot, nil)
	d := daemon(t)
	ph, ch := produce.HTTP(WriteMethods...), comp.Compactor()

	if resp, err := ph(sampled(), event("POST", "/v1/topics", `{"name":"t","segment_bytes":4096}`)); err != nil || resp.StatusCode != 201 {
		t.Fatalf("create: %d %v", resp.StatusCode, err)
	}
	body := `{"records":[{"value":"` + strings.Repeat("v", 3000) + `"}]}`
	for i := 0; i < 2; i++ { // the second rolls
		if resp, err := ph(sampled(), event("POST", "/v1/topics/t/partitions/0/records", body)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("produce: %d %s %v", resp.StatusCode, resp.Body, err)
		}
	}
	want := []string{"tierlog.produce", "tierlog.lease_acquire", "tierlog.efs_append_fsync", "tierlog.metadata_commit", "DynamoDB"}
	if seen := segments(d, want...); !hasAll(seen, want) {
		t.Fatalf("produce: saw %v, want %v", seen, want)
	}
	if _, err := ch(sampled(), []byte(`{"source":"aws.events","detail-type":"Scheduled Event"}`)); err != nil {
		t.Fatal(err)
	}
	want = []string{"tierlog.compactor", "tierlog.compact_partition", "tierlog.compact_finalize", "tierlog.compact_hot_clean", "S3", "DynamoDB"}
	if seen := segments(d, want...); !hasAll(seen, want) {
		t.Fatalf("compactor: saw %v, want %v", seen, want)
	}

	// Untraced calls (no segment in the context) run and are not traced.
	if _, err := produce.srv.Meta.Topics(context.Background()); err != nil {
		t.Fatal(err)
	}
	// No daemon listening: segments are dropped, requests unaffected.
	closed := d.LocalAddr().String()
	d.Close()
	if err := xray.Configure(xray.Config{DaemonAddr: closed}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if resp, err := ph(sampled(), event("POST", "/v1/topics/t/partitions/0/records", body)); err != nil || resp.StatusCode != 200 {
			t.Fatalf("produce without a daemon: %d %v", resp.StatusCode, err)
		}
	}
}

func hasAll(seen map[string]int, want []string) bool {
	for _, w := range want {
		if seen[w] == 0 {
			return false
		}
	}
	return true
}
