package e2e

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestColdStart measures what a cold start costs each function, with and
// without the X-Ray SDK, against a minimal aws-lambda-go handler, under
// the RIE. It is opt-in (it builds five variants, two for arm64):
//
//	TIERLOG_COLDSTART=10 go test -run TestColdStart -v ./functions/e2e/
//
// runs 10 cold starts per function and variant. For each it reports the
// median of:
//
//   - cold: the first invocation's round trip (process start, Go runtime
//     and package init, lambdafn.New, runtime API handshake, the request);
//   - warm: a later invocation's round trip (the request alone);
//   - init = cold - warm, the cold start as a caller sees it;
//   - pkginit: the Go package initializers (GODEBUG=inittrace=1), and new:
//     lambdafn.New (logged "new_ms"). The RIE's own "Init Duration" is not
//     used: the RIE reports the time to start init, not to finish it.
//
// and the sizes of the linux/amd64 binaries and of the linux/arm64 zips
// make build ships.
func TestColdStart(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("TIERLOG_COLDSTART"))
	if n <= 0 {
		t.Skip("set TIERLOG_COLDSTART=<cold starts per variant> to measure")
	}
	ensureRIE(t)
	type variant struct {
		name string
		tags []string
		fns  []string
	}
	variants := []variant{
		{"xray", nil, []string{"produce", "fetch", "compactor"}},
		{"noxray", []string{"noxray"}, []string{"produce", "fetch", "compactor"}},
	}
	root := t.TempDir()
	for _, v := range variants {
		buildFunctions(t, filepath.Join(root, v.name), v.tags...)
	}
	buildMinimal(t, filepath.Join(root, "minimal", "minimal"))
	variants = append(variants, variant{"minimal", nil, []string{"minimal"}})
	ep := startEndpoint(t) // the compactor's pass lists the (no) topics
	createResources(t, ep.URL)

	var report strings.Builder
	fmt.Fprintf(&report, "\n%-8s %-9s %9s %8s %7s %7s %8s %7s %10s %10s\n",
		"variant", "function", "cold ms", "warm ms", "init", "pkginit", "new ms", "runs", "amd64 MB", "arm64 zip")
	zips := armZipSizes(t, root)
	for _, v := range variants {
		for _, fn := range v.fns {
			bin := filepath.Join(root, v.name, fn)
			var cold, warm, pkg, newMs []float64
			for i := 0; i < n; i++ {
				c, w, p, nm := coldStartOnce(t, fn, bin, ep.URL)
				cold, warm, pkg, newMs = append(cold, c), append(warm, w), append(pkg, p), append(newMs, nm)
			}
			fi, err := os.Stat(bin)
			if err != nil {
				t.Fatal(err)
			}
			zipMB := "-"
			if z, ok := zips[v.name+"/"+fn]; ok {
				zipMB = fmt.Sprintf("%.1f MB", float64(z)/1e6)
			}
			fmt.Fprintf(&report, "%-8s %-9s %9.1f %8.1f %7.1f %7.1f %8.2f %7d %10.1f %10s\n",
				v.name, fn, median(cold), median(warm), median(cold)-median(warm), median(pkg), median(newMs), n,
				float64(fi.Size())/1e6, zipMB)
		}
	}
	t.Log(report.String())
}

// coldStartOnce starts fn under a fresh RIE and returns the cold and warm
// round trips of GET /v1/health (fetch, minimal; produce answers it 405
// from its route filter) or of a scheduled pass over no topics (compactor:
// one DynamoDB query), the package init time and lambdafn.New's time, in
// ms.
func coldStartOnce(t *testing.T, fn, bin, endpoint string) (cold, warm, pkginit, newMs float64) {
	t.Helper()
	env := []string{
		"GODEBUG=inittrace=1",
		"AWS_REGION=" + region, "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_ENDPOINT_URL=" + endpoint,
		"AWS_EC2_METADATA_DISABLED=true",
		"TIERLOG_HOT_DIR=" + t.TempDir(), "TIERLOG_TABLE=" + table, "TIERLOG_BUCKET=" + bucket,
		"TIERLOG_COMPACTOR_FUNCTION=tierlog-compactor", // produce builds its Lambda client
	}
	r := startRIE(t, fn, bin, env)
	defer r.stop()
	var payload any = apigwEvent("GET", "/v1/health", nil, nil)
	if fn == "compactor" {
		payload = map[string]any{"source": "aws.events", "detail-type": "Scheduled Event"}
	}
	raw, _ := jsonPayload(payload)
	roundTrip := func() float64 {
		start := time.Now()
		resp, err := http.Post(r.url, "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Fatalf("%s: %v", fn, err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return float64(time.Since(start).Microseconds()) / 1000
	}
	cold = roundTrip()
	var ws []float64
	for i := 0; i < 5; i++ {
		ws = append(ws, roundTrip())
	}
	warm = median(ws)
	out := r.out.String()
	for _, m := range initLine.FindAllStringSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		pkginit += v
	}
	if m := newLine.FindStringSubmatch(out); m != nil {
		newMs, _ = strconv.ParseFloat(m[1], 64)
	}
	return cold, warm, pkginit, newMs
}

var (
	initLine = regexp.MustCompile(`(?m)^init \S+ @[0-9.]+ ms, ([0-9.]+) ms clock`)
	newLine  = regexp.MustCompile(`"new_ms":([0-9.]+)`)
)

func jsonPayload(v any) ([]byte, error) { return json.Marshal(v) }

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func buildMinimal(t *testing.T, out string) {
	t.Helper()
	cmd := exec.Command(goTool(t), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
		"-o", out, "./functions/e2e/testdata/minimal")
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build minimal: %v\n%s", err, b)
	}
}

// armZipSizes builds the functions for linux/arm64 as make build does, for
// the xray and noxray variants, and returns each zip's size by
// "variant/function" (zipped in memory, deflate, as tools/zipbin does).
func armZipSizes(t *testing.T, root string) map[string]int {
	t.Helper()
	sizes := map[string]int{}
	for _, v := range []struct{ name, tags string }{{"xray", "lambda.norpc"}, {"noxray", "lambda.norpc,noxray"}} {
		dir := filepath.Join(root, "arm64-"+v.name)
		cmd := exec.Command(goTool(t), "build", "-tags", v.tags, "-trimpath", "-ldflags", "-s -w", "-o", dir+"/",
			"./functions/produce", "./functions/fetch", "./functions/compactor")
		cmd.Dir = repoRoot(t)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=arm64")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("arm64 build: %v\n%s", err, b)
		}
		for _, fn := range []string{"produce", "fetch", "compactor"} {
			bin, err := os.ReadFile(filepath.Join(dir, fn))
			if err != nil {
				t.Fatal(err)
			}
			var buf bytes.Buffer
			zw := zip.NewWriter(&buf)
			w, err := zw.CreateHeader(&zip.FileHeader{Name: "bootstrap", Method: zip.Deflate})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Write(bin); err != nil {
				t.Fatal(err)
			}
			if err := zw.Close(); err != nil {
				t.Fatal(err)
			}
			sizes[v.name+"/"+fn] = buf.Len()
			t.Logf("arm64 %s/%s: binary %.1f MB, zip %.1f MB", v.name, fn, float64(len(bin))/1e6, float64(buf.Len())/1e6)
		}
	}
	return sizes
}
