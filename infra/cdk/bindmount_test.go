package main

// hotTier=bindMount (the LocalStack deploy, localstack/README.md way A)
// and the feature flags of cdk.json.

import (
	"archive/zip"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// cdkJSON is cdk.json's "context": the feature flags `cdk synth` applies.
// newStack passes them to the test app, so the tests check the template
// the CLI deploys.
var cdkJSON = sync.OnceValues(func() (map[string]any, error) {
	b, err := os.ReadFile("cdk.json")
	if err != nil {
		return nil, err
	}
	var f struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	return f.Context, nil
})

func cdkJSONContext(t testing.TB) *map[string]any {
	t.Helper()
	ctx, err := cdkJSON()
	if err != nil {
		t.Fatalf("cdk.json: %v", err)
	}
	m := map[string]any{}
	for k, v := range ctx {
		m[k] = v
	}
	return &m
}

// TestFeatureFlagsSet: cdk.json sets the recommended feature flags (the
// values `cdk flags --set --all --recommended` writes for the pinned CLI
// and aws-cdk-lib), so synth prints no "feature flags are not
// configured" warning; no tierlog context key is set there by default.
func TestFeatureFlagsSet(t *testing.T) {
	ctx, err := cdkJSON()
	if err != nil {
		t.Fatal(err)
	}
	if len(ctx) < 100 {
		t.Errorf("cdk.json sets %d feature flags, want the recommended set (over 100)", len(ctx))
	}
	for k, v := range map[string]any{
		"@aws-cdk/aws-efs:denyAnonymousAccess":                  true, // stack.go's AllowAnonymousAccess comment
		"@aws-cdk/aws-iam:minimizePolicies":                     true,
		"@aws-cdk/aws-efs:mountTargetOrderInsensitiveLogicalId": true,
		"@aws-cdk/core:target-partitions":                       []any{"aws", "aws-cn"},
	} {
		if !reflect.DeepEqual(ctx[k], v) {
			t.Errorf("cdk.json %s = %v, want %v", k, ctx[k], v)
		}
	}
	for k := range ctx {
		if !strings.HasPrefix(k, "@aws-cdk") {
			t.Errorf("cdk.json context %q: only feature flags belong there (tierlog keys are passed with -c)", k)
		}
	}
}

func bindMountConfig(t *testing.T) Config {
	t.Helper()
	cfg, err := ConfigFromContext(func(k string) any { return map[string]any{"hotTier": "bindMount"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	if cfg.HotTier != HotTierBindMount || cfg.EFS() {
		t.Fatalf("hotTier=bindMount gave %+v", cfg)
	}
	return cfg
}

// TestLambdaArch: -c lambdaArch=amd64 (make deploy-local passes
// LAMBDA_GOARCH) makes x86_64 functions; nothing else changes.
func TestLambdaArch(t *testing.T) {
	cfg, err := ConfigFromContext(func(k string) any { return map[string]any{"lambdaArch": "amd64", "hotTier": "bindMount"}[k] })
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, cfg, false)
	check(t, "x86_64 functions", func() {
		s.tpl.AllResourcesProperties(jsii.String("AWS::Lambda::Function"), map[string]any{"Architectures": []any{"x86_64"}})
	})
	if DefaultConfig().LambdaArch != "arm64" {
		t.Errorf("default lambdaArch = %q", DefaultConfig().LambdaArch)
	}
	for _, bad := range []string{"x86_64", "386", ""} {
		if _, err := ConfigFromContext(func(k string) any { return map[string]any{"lambdaArch": bad}[k] }); err == nil {
			t.Errorf("lambdaArch=%q accepted", bad)
		}
	}
}

func TestHotTierContext(t *testing.T) {
	for in, want := range map[string]string{"efs": HotTierEFS, "EFS": HotTierEFS, "bindMount": HotTierBindMount, "bindmount": HotTierBindMount} {
		cfg, err := ConfigFromContext(func(k string) any { return map[string]any{"hotTier": in}[k] })
		if err != nil || cfg.HotTier != want {
			t.Errorf("hotTier=%s: %q, %v; want %q", in, cfg.HotTier, err, want)
		}
	}
	for _, bad := range []any{"nfs", "", true} {
		if _, err := ConfigFromContext(func(k string) any { return map[string]any{"hotTier": bad}[k] }); err == nil {
			t.Errorf("hotTier=%v accepted", bad)
		}
	}
	if DefaultConfig().HotTier != HotTierEFS {
		t.Errorf("default hotTier = %q, want efs", DefaultConfig().HotTier)
	}
}

// efsOnly reports whether a resource of the default stack exists only for
// EFS: the VPC and everything in it, the file system, and the flow log's
// role, policy and log group.
func efsOnly(id, typ string) bool {
	return strings.HasPrefix(typ, "AWS::EC2::") || strings.HasPrefix(typ, "AWS::EFS::") ||
		strings.HasPrefix(id, "Vpc")
}

// TestBindMount: hotTier=bindMount is the default stack without EFS and
// the VPC, and nothing else changed: every other resource and output is
// the same, but for the functions' VPC and file system config, the roles'
// VPC-access managed policy and the EFS statements of their policies.
func TestBindMount(t *testing.T) {
	d := defaultStack(t)
	s := newStack(t, bindMountConfig(t), false)
	for _, typ := range []string{
		"AWS::EFS::FileSystem", "AWS::EFS::MountTarget", "AWS::EFS::AccessPoint",
		"AWS::EC2::VPC", "AWS::EC2::Subnet", "AWS::EC2::SecurityGroup", "AWS::EC2::SecurityGroupIngress",
		"AWS::EC2::VPCEndpoint", "AWS::EC2::FlowLog", "AWS::EC2::RouteTable",
	} {
		check(t, "no "+typ, func() { s.tpl.ResourceCountIs(jsii.String(typ), jsii.Number(0)) })
	}
	for id, r := range s.resources() {
		if efsOnly(id, r["Type"].(string)) {
			t.Errorf("bindMount stack has %s (%s)", id, r["Type"])
		}
	}

	table := s.logicalID(t, "AWS::DynamoDB::Table", "Table")
	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	compactor := s.logicalID(t, "AWS::Lambda::Function", "Compactor")
	for _, fn := range []string{"Produce", "Fetch", "Compactor"} {
		p := props(s.resources()[s.logicalID(t, "AWS::Lambda::Function", fn)])
		for _, k := range []string{"VpcConfig", "FileSystemConfigs"} {
			if v, ok := p[k]; ok {
				t.Errorf("%s.%s = %v, want none", fn, k, v)
			}
		}
		env := map[string]any{"TIERLOG_HOT_DIR": "/mnt/tierlog", "TIERLOG_TABLE": ref(table), "TIERLOG_BUCKET": ref(bucket)}
		if fn == "Produce" {
			env["TIERLOG_COMPACTOR_FUNCTION"] = ref(compactor)
		}
		if got := p["Environment"]; !reflect.DeepEqual(got, map[string]any{"Variables": env}) {
			t.Errorf("%s environment = %v, want %v", fn, got, env)
		}
		role := props(s.resources()[s.logicalID(t, "AWS::IAM::Role", fn+"Role")])
		if v, ok := role["ManagedPolicyArns"]; ok {
			t.Errorf("%s role has managed policies %v outside a VPC", fn, v)
		}
		grants, _ := s.grants(t, fn)
		for a := range grants {
			if strings.HasPrefix(a, "elasticfilesystem:") || strings.HasPrefix(a, "ec2:") {
				t.Errorf("%s may %s without EFS", fn, a)
			}
		}
	}
	produce, _ := s.grants(t, "Produce")
	if _, ok := produce["lambda:InvokeFunction"]; !ok {
		t.Errorf("produce may not invoke the compactor (outside a VPC it reaches the Lambda API without an endpoint)")
	}

	// Everything else as before.
	dres, sres := d.resources(), s.resources()
	for id, r := range dres {
		if _, ok := sres[id]; !ok && !efsOnly(id, r["Type"].(string)) {
			t.Errorf("bindMount stack lacks %s (%s)", id, r["Type"])
		}
	}
	for id, r := range sres {
		dr, ok := dres[id]
		if !ok {
			t.Errorf("bindMount stack adds %s (%s)", id, r["Type"])
			continue
		}
		if id == "CDKMetadata" {
			continue
		}
		if want := withoutEFS(t, dr); !reflect.DeepEqual(r, want) {
			a, _ := json.Marshal(r)
			b, _ := json.Marshal(want)
			t.Errorf("%s differs:\n %s\nwant (the default stack's, without EFS)\n %s", id, a, b)
		}
	}
	dout, sout := d.json["Outputs"].(map[string]any), s.json["Outputs"].(map[string]any)
	for name, o := range dout {
		if name == "FileSystemId" {
			if _, ok := sout[name]; ok {
				t.Errorf("bindMount stack outputs FileSystemId")
			}
			continue
		}
		if !reflect.DeepEqual(sout[name], o) {
			t.Errorf("output %s = %v, want %v", name, sout[name], o)
		}
	}
	if len(sout) != len(dout)-1 {
		t.Errorf("outputs %d, want %d", len(sout), len(dout)-1)
	}
}

// withoutEFS is a resource of the default stack as the bindMount stack
// should have it.
func withoutEFS(t *testing.T, r map[string]any) map[string]any {
	t.Helper()
	var c map[string]any
	b, _ := json.Marshal(r)
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	p, _ := c["Properties"].(map[string]any)
	switch c["Type"] {
	case "AWS::Lambda::Function":
		delete(p, "VpcConfig")
		delete(p, "FileSystemConfigs")
	case "AWS::IAM::Role":
		delete(p, "ManagedPolicyArns")
	case "AWS::IAM::Policy":
		doc := p["PolicyDocument"].(map[string]any)
		var kept []any
		for _, st := range doc["Statement"].([]any) {
			efs := false
			for _, a := range strs(st.(map[string]any)["Action"]) {
				efs = efs || strings.HasPrefix(a.(string), "elasticfilesystem:")
			}
			if !efs {
				kept = append(kept, st)
			}
		}
		doc["Statement"] = kept
	}
	if deps, ok := c["DependsOn"].([]any); ok {
		kept := slices.DeleteFunc(slices.Clone(deps), func(d any) bool {
			return strings.HasPrefix(d.(string), "HotTier") || strings.HasPrefix(d.(string), "Vpc")
		})
		if len(kept) == 0 {
			delete(c, "DependsOn")
		} else {
			c["DependsOn"] = kept
		}
	}
	return c
}

// TestBindMountNag: the bindMount stack passes cdk-nag's AwsSolutions
// checks too (`make deploy-local` runs them), without warnings.
func TestBindMountNag(t *testing.T) {
	cfg := bindMountConfig(t)
	cfg.RemovalPolicy = "destroy"
	s := newStack(t, cfg, true)
	ann := assertions.Annotations_FromStack(s.stack)
	for _, m := range *ann.FindError(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("error at %s: %v", *m.Id, m.Entry.Data)
	}
	for _, m := range *ann.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning at %s: %v", *m.Id, m.Entry.Data)
	}
}

// TestCdklocalSynth runs what `make deploy-local` runs, offline:
// cdklocal (aws-cdk-local, pinned in package.json) over the pinned CDK
// CLI and the real app (main.go, zips from distDir), with hotTier=
// bindMount and the Makefile's LocalStack environment. It skips only
// without Node; with Node, `npm ci` in infra/cdk (make cdk-deps) must
// have run.
func TestCdklocalSynth(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: cdklocal synth builds and runs the app")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("no node: cdklocal needs Node.js")
	}
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Fatalf("node without npx: %v", err)
	}
	if _, err := os.Stat(filepath.Join("node_modules", ".bin", "cdklocal")); err != nil {
		t.Fatalf("cdklocal is not installed: run `npm ci` in infra/cdk (make cdk-deps): %v", err)
	}
	dist := t.TempDir()
	for _, fn := range []string{FnProduce, FnFetch, FnCompactor} {
		writeZip(t, filepath.Join(dist, fn+".zip"), "bootstrap", "#!/bin/sh\nexit 1\n")
	}
	out := t.TempDir()
	cmd := exec.Command(npx, "--no-install", "cdklocal", "synth", "-q", "--no-notices",
		"-c", "hotTier=bindMount", "-c", "removalPolicy=destroy", "-c", "distDir="+dist, "-o", out)
	// Makefile LOCAL_AWS_ENV: no LocalStack needs to run for synth.
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL=http://127.0.0.1:4566", "AWS_ENDPOINT_URL_S3=http://127.0.0.1:4566",
		"AWS_S3_FORCE_PATH_STYLE=1", "AWS_REGION=us-east-1", "AWS_DEFAULT_REGION=us-east-1",
		"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20", "CDK_DISABLE_VERSION_CHECK=1")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cdklocal synth: %v\n%s", err, b)
	}
	if strings.Contains(string(b), "feature flags are not configured") {
		t.Errorf("synth warns about feature flags:\n%s", b)
	}
	raw, err := os.ReadFile(filepath.Join(out, "Tierlog.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct {
			Type       string
			Properties map[string]any
		}
	}
	if err := json.Unmarshal(raw, &tpl); err != nil {
		t.Fatal(err)
	}
	fns := 0
	for id, r := range tpl.Resources {
		if efsOnly(id, r.Type) {
			t.Errorf("cdklocal template has %s (%s)", id, r.Type)
		}
		if r.Type == "AWS::Lambda::Function" {
			fns++
			vars, _ := r.Properties["Environment"].(map[string]any)["Variables"].(map[string]any)
			if vars["TIERLOG_HOT_DIR"] != HotDir {
				t.Errorf("%s TIERLOG_HOT_DIR = %v, want %s", id, vars["TIERLOG_HOT_DIR"], HotDir)
			}
			if _, ok := r.Properties["VpcConfig"]; ok {
				t.Errorf("%s has a VpcConfig", id)
			}
		}
	}
	if fns != 3 {
		t.Errorf("%d functions, want 3", fns)
	}
}

func writeZip(t *testing.T, path, name, content string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	zw := zip.NewWriter(f)
	w, err := zw.CreateHeader(&zip.FileHeader{Name: name, Method: zip.Deflate, ExternalAttrs: 0o755 << 16})
	if err == nil {
		_, err = w.Write([]byte(content))
	}
	if err == nil {
		err = zw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
}
