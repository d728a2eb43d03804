package e2e

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestLambdaLocal: localstack/lambda-local.sh (make lambda-local) starts
// lite and the four functions under the RIE, prints their endpoints and
// "ready"; the produce function then creates a topic and appends a
// record the fetch function reads back; SIGTERM stops every process it
// started (nothing listens on any of its ports after). The Makefile
// installs the emulator this package pins.
func TestLambdaLocal(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four functions and lite, and runs them (-short)")
	}
	start := time.Now()
	root := repoRoot(t)
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?m)^RIE_MODULE := (\S+)$`).FindSubmatch(mk); m == nil || string(m[1]) != rieModule {
		t.Errorf("Makefile RIE_MODULE %q, want %q (the emulator this package pins)", m, rieModule)
	}

	dir := t.TempDir()
	fnDir, lite := filepath.Join(dir, "fn"), filepath.Join(dir, "tierlog-lite")
	functions := []string{"produce", "fetch", "compactor", "deliver"}
	args := []string{"build", "-tags", "lambda.norpc", "-o", fnDir + string(filepath.Separator)}
	for _, f := range functions {
		args = append(args, "./functions/"+f)
	}
	for _, b := range []*exec.Cmd{exec.Command(goTool(t), args...), exec.Command(goTool(t), "-C", "localstack/lite", "build", "-o", lite, ".")} {
		b.Dir = root
		b.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := b.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", b.Args, err, out)
		}
	}
	riePath := ensureRIE(t)
	t.Logf("built in %v", time.Since(start).Round(time.Millisecond))

	litePort := freePort(t)
	ports := make([]int, 8)
	for i := range ports {
		ports[i] = freePort(t)
	}
	cmd := exec.Command("bash", filepath.Join(root, "localstack", "lambda-local.sh"))
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "FN_DIR=" + fnDir, "RIE=" + riePath, "LITE=" + lite,
		fmt.Sprintf("LITE_LISTEN=127.0.0.1:%d", litePort), "HOT_DIR=" + filepath.Join(dir, "hot"),
		"LAMBDA_PORTS=" + strings.Trim(fmt.Sprint(ports), "[]")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out := &lockedBuffer{}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		signalled := false
		for sc.Scan() {
			fmt.Fprintln(out, sc.Text())
			if !signalled && strings.HasPrefix(sc.Text(), "lambda-local: ready") {
				signalled = true
				close(ready)
			}
		}
		done <- cmd.Wait()
	}()
	stopped := false
	t.Cleanup(func() {
		if !stopped { // the test failed before stopping it: end the group
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-done
		}
	})
	select {
	case <-ready:
	case err := <-done:
		stopped = true
		t.Fatalf("lambda-local.sh ended before ready: %v\n%s", err, out.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("lambda-local.sh not ready in 60 s\n%s", out.String())
	}
	t.Logf("ready %v after the start", time.Since(start).Round(time.Millisecond))
	for i, f := range functions {
		want := fmt.Sprintf("lambda-local: %-10s http://127.0.0.1:%d/2015-03-31/functions/function/invocations", f, ports[i])
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not print %s's endpoint %q:\n%s", f, want, out.String())
		}
	}

	fn := func(i int) *rie {
		return &rie{name: functions[i], url: fmt.Sprintf("http://127.0.0.1:%d/2015-03-31/functions/function/invocations", ports[i]), out: out}
	}
	produce, fetch := fn(0), fn(1)
	h, body := jsonBody(t, map[string]any{"name": "orders"})
	if r := produce.call(t, http.MethodPost, "/v1/topics", h, body); r.Status != http.StatusCreated {
		t.Fatalf("create topic through produce: %d %s", r.Status, r.Body)
	}
	h, body = jsonBody(t, map[string]any{"records": []map[string]any{{"key": "k", "value": "hello"}}})
	if r := produce.call(t, http.MethodPost, "/v1/topics/orders/records", h, body); r.Status != http.StatusOK {
		t.Fatalf("produce: %d %s", r.Status, r.Body)
	}
	r := fetch.call(t, http.MethodGet, "/v1/topics/orders/partitions/0/records?offset=0", nil, nil)
	var got struct {
		Records []struct {
			Offset int64  `json:"offset"`
			Value  string `json:"value"`
		} `json:"records"`
	}
	r.decode(t, &got)
	if r.Status != http.StatusOK || len(got.Records) != 1 || got.Records[0].Value != "hello" || got.Records[0].Offset != 0 {
		t.Fatalf("fetch: %d %s, want the one record \"hello\" at offset 0", r.Status, r.Body)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		stopped = true
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 143 {
			t.Errorf("lambda-local.sh after SIGTERM: %v, want exit status 143", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("lambda-local.sh still running 20 s after SIGTERM\n%s", out.String())
	}
	if !strings.Contains(out.String(), "lambda-local: stopped") {
		t.Errorf("no \"stopped\" line:\n%s", out.String())
	}
	for _, p := range append([]int{litePort}, ports[:4]...) {
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), time.Second); err == nil {
			c.Close()
			t.Errorf("port %d still listens after the script stopped", p)
		}
	}
	t.Logf("whole test %v", time.Since(start).Round(time.Millisecond))
}
