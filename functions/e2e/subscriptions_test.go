package e2e

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
	"github.com/tierlog/tierlog/pkg/subscribe"
)

// TestSubscriptionLambdaTarget: a real Go handler built on aws-lambda-go's
// events.KafkaEvent runs under the Runtime Interface Emulator; the local
// server's deliverer invokes it through AWS_ENDPOINT_URL_LAMBDA (function
// name "function", the RIE's path). The handler fails a poison record once
// with a partial batch answer (the records before it are done, the batch
// is retried from it), then fails a whole invocation once with a function
// error (the batch is sent again whole).
func TestSubscriptionLambdaTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a handler under the Lambda Runtime Interface Emulator: skipped with -short (make unit); make test runs it")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "kafkahandler")
	cmd := exec.Command(goTool(t), "build", "-tags", "lambda.norpc", "-trimpath", "-o", bin, "./functions/e2e/testdata/kafkahandler")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build kafkahandler: %v\n%s", err, out)
	}
	fn := startRIE(t, "kafkahandler", bin, nil)
	u, err := url.Parse(fn.url)
	if err != nil {
		t.Fatal(err)
	}
	// The SDK's own configuration: endpoint, region and (dummy)
	// credentials from the environment, as a user would point `tierlog
	// serve` at an emulator.
	t.Setenv("AWS_ENDPOINT_URL_LAMBDA", u.Scheme+"://"+u.Host)
	t.Setenv("AWS_REGION", "us-east-1")
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))

	s, err := server.Open(context.Background(), server.Config{DataDir: filepath.Join(dir, "data"), CompactInterval: -1, RunSubscriptions: true,
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Subscribe: subscribe.Config{InvokeTimeout: 10 * time.Second, RetryBase: 20 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "orders"}); err != nil {
		t.Fatal(err)
	}
	values := []string{"a", "b", "c", "poison", "d", "boom", "e"}
	var recs []broker.ProduceRecord
	for _, v := range values {
		recs = append(recs, broker.ProduceRecord{Key: []byte("k"), Value: []byte(v), Partition: 0,
			Headers: []broker.Header{{Key: "trace-id", Value: []byte("t-" + v)}}})
	}
	if _, err := s.Broker.Produce(ctx, "orders", recs); err != nil {
		t.Fatal(err)
	}
	sub, err := s.Subscriptions.Create(ctx, subscribe.Spec{Name: "billing-fn", Topic: "orders",
		Target: &subscribe.Target{Type: subscribe.TargetLambda, Function: "function"},
		Start:  &subscribe.Start{Position: subscribe.StartEarliest}})
	if err != nil {
		t.Fatal(err)
	}
	var st subscribe.Status
	deadline := time.Now().Add(30 * time.Second)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		if st, err = s.Subscriptions.Describe(ctx, sub); err != nil {
			t.Fatal(err)
		}
		if len(st.Partitions) == 1 && st.Partitions[0].CommittedOffset == int64(len(values)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not delivered in 30s: %+v\n%s", st, fn.out.String())
		}
		<-tick.C
	}
	if st.Delivered != int64(len(values)) || st.FailedAttempts != 2 || st.SentToOnFailure != 0 {
		t.Fatalf("status = %+v", st)
	}
	var got []string
	for _, line := range fn.out.jsonLines() {
		v, ok := line["value"].(string)
		if !ok {
			continue
		}
		hs, _ := json.Marshal(line["headers"])
		if !strings.Contains(string(hs), "trace-id=t-"+v) {
			t.Errorf("record %q headers %s: the handler did not see its header", v, hs)
		}
		got = append(got, v)
	}
	// The poison record failed once: the records before it were done and
	// not sent again, the retry started at it. The function error failed
	// that whole batch: poison and d, handled before it, came again.
	if strings.Join(got, ",") != "a,b,c,poison,d,poison,d,boom,e" {
		t.Fatalf("the handler handled %v", got)
	}
	if !strings.Contains(fn.out.String(), "boom at offset 5") {
		t.Errorf("the function error is not in the function's output")
	}
}
