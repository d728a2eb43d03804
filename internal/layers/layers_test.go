package layers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/tierlog/tierlog"

// layers lists every package of the module, lowest layer first. A package
// may import packages of its own layer and of lower ones, never of a
// higher one. Only the packages' own (non-test) imports count: a test
// assembles whatever it needs from any layer.
var layers = [][]string{
	// Leaves: they import no package of the module.
	{"pkg/index", "pkg/wire", "pkg/partitioner", "pkg/metrics", "pkg/trace", "internal/apilimit", "internal/jsonx", "internal/testenv", "internal/hrsleep", "localstack/emulator"},
	// The segment file format (over the index); the Go client (over the
	// wire format and the partitioner).
	{"pkg/segment", "pkg/client"},
	// The ports: metadata and objects.
	{"pkg/meta", "pkg/objstore"},
	// One partition's hot log; the cold tier.
	{"pkg/partition", "pkg/tier", "pkg/auth"},
	// Topics, routing, produce, fetch, groups; finalize, retention, cleanup.
	{"pkg/broker", "pkg/compactor", "pkg/subscribe"},
	// The JSON of records: the produce body's scanner, the fetch and
	// produce answers' encoders (over the broker's record types).
	{"internal/jsonrec"},
	// The HTTP API over the broker.
	{"pkg/api"},
	// The web console: its pages, and its history of the broker's counters.
	{"pkg/console"},
	// The ports' adapters and conformance suites: above the core, so that
	// only the wiring above them picks a backend.
	{"pkg/meta/local", "pkg/meta/mem", "pkg/meta/dynamo", "pkg/meta/metatest",
		"pkg/objstore/local", "pkg/objstore/mem", "pkg/objstore/s3", "pkg/objstore/faulty", "pkg/objstore/objtest",
		"pkg/subscribe/lambdatarget"},
	// Wiring: a backend, the broker, the compactor and /metrics; the
	// deterministic simulation over the in-memory adapters.
	{"pkg/server", "internal/sim"},
	// The Lambda functions' library: API Gateway adapter, X-Ray, EMF.
	{"pkg/lambdafn"},
	// The produce function's notice to the compactor function.
	{"pkg/lambdafn/compactnotify"},
	// The load harness behind tierlog bench: servers, dynalite, the
	// cold tier's compactor, the client.
	{"internal/bench"},
	// Mains, examples and tests of the whole.
	{"cmd/tierlog", "functions/produce", "functions/fetch", "functions/compactor", "functions/deliver", "functions/e2e",
		"tools/zipbin", "examples", "internal/layers", "internal/systest"},
}

// awsSDK are the import path prefixes of the AWS SDK for Go v2: its modules
// and smithy-go, the runtime its clients are built on.
var awsSDK = []string{"github.com/aws/aws-sdk-go-v2", "github.com/aws/smithy-go"}

// awsAllowed are the packages that may import the AWS SDK, and why. Tests
// may import it anywhere (they drive the emulators and dynalite with it).
// infra/cdk and localstack/lite are modules of their own, outside this check.
var awsAllowed = map[string]string{
	"pkg/meta/dynamo":            "the DynamoDB adapter of the metadata port",
	"pkg/objstore/s3":            "the S3 adapter of the object port",
	"pkg/server":                 "wiring: the aws backend's DynamoDB and S3 clients, and the API options (middleware) added to them",
	"pkg/client":                 "SigV4 signing of requests to an IAM-protected API Gateway",
	"pkg/lambdafn":               "the functions' SDK middleware: X-Ray subsegments around the SDK's calls",
	"pkg/lambdafn/compactnotify": "the produce function invokes the compactor function through the Lambda API",
	"pkg/subscribe/lambdatarget": "subscriptions invoke their Lambda targets through the Lambda API",
	"cmd/tierlog":                "the CLI: credentials for --sigv4",
	"internal/bench":             "bench contention and bench cloud: DynamoDB (dynalite) tables for their servers, S3 for the tiering step",
}

type pkg struct {
	ImportPath string
	Imports    []string
}

// listPackages is `go list -json ./...` run at the module root: the
// module's packages and their own imports.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	goTool, err := exec.LookPath("go") // go test puts its GOROOT/bin first on PATH
	if err != nil {
		t.Fatalf("no go command on PATH: %v", err)
	}
	cmd := exec.Command(goTool, "list", "-json=ImportPath,Imports", "./...")
	cmd.Dir = filepath.Join("..", "..")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.Bytes())
	}
	var pkgs []pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

// rel is path relative to the module, and whether it is in the module.
func rel(path string) (string, bool) {
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r, true
	}
	return path, path == module
}

func TestLayers(t *testing.T) {
	problems := checkLayers(listPackages(t))
	for _, p := range problems {
		t.Error(p)
	}
}

func checkLayers(pkgs []pkg) []string {
	rank := map[string]int{}
	var problems []string
	for i, layer := range layers {
		for _, p := range layer {
			if _, dup := rank[p]; dup {
				problems = append(problems, fmt.Sprintf("%s is in the layer list twice", p))
			}
			rank[p] = i
		}
	}
	seen := map[string]bool{}
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		seen[name] = true
		r, ok := rank[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s is in no layer: add it to the layer list in internal/layers", name))
			continue
		}
		for _, imp := range p.Imports {
			dep, own := rel(imp)
			if !own {
				continue
			}
			if d, ok := rank[dep]; ok && d > r {
				problems = append(problems, fmt.Sprintf("%s (layer %d) imports %s of a higher layer (%d)", name, r, dep, d))
			}
		}
	}
	var stale []string
	for p := range rank {
		if !seen[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	for _, p := range stale {
		problems = append(problems, fmt.Sprintf("%s is in the layer list but is no package of the module", p))
	}
	return problems
}

func TestAWSSDKImports(t *testing.T) {
	for _, p := range checkAWS(listPackages(t)) {
		t.Error(p)
	}
}

func checkAWS(pkgs []pkg) []string {
	var problems []string
	importers := map[string]bool{}
	for _, p := range pkgs {
		name, _ := rel(p.ImportPath)
		for _, imp := range p.Imports {
			if !slices.ContainsFunc(awsSDK, func(prefix string) bool { return imp == prefix || strings.HasPrefix(imp, prefix+"/") }) {
				continue
			}
			if _, ok := awsAllowed[name]; !ok && !importers[name] {
				problems = append(problems, fmt.Sprintf("%s imports the AWS SDK (%s) and is not in the allow-list", name, imp))
			}
			importers[name] = true
		}
	}
	var stale []string
	for p := range awsAllowed {
		if !importers[p] {
			stale = append(stale, p)
		}
	}
	sort.Strings(stale)
	for _, p := range stale {
		problems = append(problems, fmt.Sprintf("%s is in the AWS SDK allow-list but imports no AWS SDK package: remove it", p))
	}
	return problems
}
