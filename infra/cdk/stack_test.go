package main

// Assertions on the synthesized template. Every resource and property the
// stack promises has a check here; the expected values are written out
// literally rather than read back from stack.go's tables, so a change there
// has to be made twice.
//
// The tests need no AWS account, no network and no built functions: the
// function code is a directory with a placeholder bootstrap (TestDistDir
// covers the real zip path). jsii reports failed assertions as panics;
// check turns them into test errors.

import (
	"archive/zip"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

func TestMain(m *testing.M) {
	// Node 20 works, but jsii prints an end-of-life banner on every
	// start without this.
	if os.Getenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION") == "" {
		os.Setenv("JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION", "20")
	}
	dir, err := os.MkdirTemp("", "tierlog-cdk-test-")
	if err != nil {
		panic(err)
	}
	sharedDir = dir
	code := m.Run()
	jsii.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

// sharedDir holds what outlives one test: the placeholder code and the
// shared stack's cloud assembly. TestMain removes it.
var sharedDir string

// synthed is one synthesized stack: the assertions handle and the raw
// template for checks Match cannot express (cross-references).
type synthed struct {
	stack awscdk.Stack
	tpl   assertions.Template
	json  map[string]any
}

// placeholderCode is a directory asset holding a fake bootstrap, made
// once per test binary.
var placeholderCode = sync.OnceValue(func() string {
	dir := filepath.Join(sharedDir, "code")
	if err := os.Mkdir(dir, 0o755); err != nil {
		panic(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "bootstrap"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		panic(err)
	}
	return dir
})

func newStack(t testing.TB, cfg Config, nag bool) synthed {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: cdkJSONContext(t)})
	stack := NewTierlogStack(app, jsii.String("TierlogTest"), &TierlogStackProps{
		Config: cfg,
		Code: func(string) awslambda.Code {
			return awslambda.Code_FromAsset(jsii.String(placeholderCode()), nil)
		},
	})
	if nag {
		awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{
			Verbose: jsii.Bool(true),
			Reports: jsii.Bool(false),
		}), nil)
	}
	tpl := assertions.Template_FromStack(stack, nil)
	return synthed{stack: stack, tpl: tpl, json: *tpl.ToJSON()}
}

// defaultStack is the stack with DefaultConfig, synthesized once.
var (
	defaultOnce sync.Once
	defaultS    synthed
)

func defaultStack(t *testing.T) synthed {
	t.Helper()
	defaultOnce.Do(func() {
		// A TempDir of this test would vanish with it; the outdir must
		// outlive it for the other tests.
		defaultS = newStack(longLived{t}, DefaultConfig(), false)
	})
	return defaultS
}

// longLived gives newStack an outdir that is not removed when the first
// test using the shared stack ends.
type longLived struct{ *testing.T }

func (l longLived) TempDir() string {
	dir, err := os.MkdirTemp(sharedDir, "cdk.out-")
	if err != nil {
		l.Fatal(err)
	}
	return dir
}

// check runs one jsii assertion, reporting its panic as a test error.
func check(t *testing.T, what string, f func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	f()
}

// ---- raw template helpers ----

func (s synthed) resources() map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range s.json["Resources"].(map[string]any) {
		out[id] = r.(map[string]any)
	}
	return out
}

// ofType returns the logical IDs of the resources of type typ, sorted.
func (s synthed) ofType(typ string) []string {
	var ids []string
	for id, r := range s.resources() {
		if r["Type"] == typ {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// logicalID returns the one resource of type typ whose logical ID is
// prefix followed by CDK's 8-hex-digit hash.
func (s synthed) logicalID(t *testing.T, typ, prefix string) string {
	t.Helper()
	re := regexp.MustCompile("^" + regexp.QuoteMeta(prefix) + "[0-9A-F]{8}$")
	var found []string
	for _, id := range s.ofType(typ) {
		if re.MatchString(id) {
			found = append(found, id)
		}
	}
	if len(found) != 1 {
		t.Fatalf("want exactly one %s named %s<hash>, found %v", typ, prefix, found)
	}
	return found[0]
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

func ref(id string) map[string]any          { return map[string]any{"Ref": id} }
func getAtt(id, attr string) map[string]any { return map[string]any{"Fn::GetAtt": []any{id, attr}} }

// strs flattens a policy's Action or Principal.AWS value.
func strs(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	return []any{v}
}

// ---- network ----

func TestVPCIsolatedWithGatewayEndpoints(t *testing.T) {
	s := defaultStack(t)
	check(t, "no NAT gateway", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(0)) })
	check(t, "no internet gateway", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::InternetGateway"), jsii.Number(0)) })
	check(t, "no elastic IP", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::EIP"), jsii.Number(0)) })
	check(t, "one VPC", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::VPC"), jsii.Number(1)) })
	check(t, "two isolated subnets (maxAzs 2)", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::Subnet"), jsii.Number(2)) })
	check(t, "subnets give no public IPs", func() {
		s.tpl.AllResourcesProperties(jsii.String("AWS::EC2::Subnet"), map[string]any{"MapPublicIpOnLaunch": false})
	})
	check(t, "no route to anywhere but the endpoints", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::Route"), jsii.Number(0)) })

	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	table := s.logicalID(t, "AWS::DynamoDB::Table", "Table")
	serviceName := func(svc string) map[string]any {
		return map[string]any{"Fn::Join": []any{"", []any{"com.amazonaws.", ref("AWS::Region"), "." + svc}}}
	}
	check(t, "S3 gateway endpoint limited to the bucket", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
			"VpcEndpointType": "Gateway",
			"ServiceName":     serviceName("s3"),
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Effect":    "Allow",
				"Principal": map[string]any{"AWS": "*"},
				// Sorted: cdk.json's @aws-cdk/aws-iam:minimizePolicies.
				"Action": []any{"s3:AbortMultipartUpload", "s3:DeleteObject", "s3:GetObject", "s3:ListBucket", "s3:PutObject"},
				"Resource": []any{getAtt(bucket, "Arn"),
					map[string]any{"Fn::Join": []any{"", []any{getAtt(bucket, "Arn"), "/*"}}}},
			}}},
		})
	})
	check(t, "DynamoDB gateway endpoint limited to the table", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
			"VpcEndpointType": "Gateway",
			"ServiceName":     serviceName("dynamodb"),
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Effect":   "Allow",
				"Resource": getAtt(table, "Arn"),
			}}},
		})
	})
	compactor := s.logicalID(t, "AWS::Lambda::Function", "Compactor")
	check(t, "Lambda interface endpoint, private DNS, invoke compactor only", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{
			"VpcEndpointType":   "Interface",
			"ServiceName":       serviceName("lambda"),
			"PrivateDnsEnabled": true,
			"PolicyDocument": map[string]any{"Statement": []any{map[string]any{
				"Effect": "Allow", "Action": "lambda:InvokeFunction", "Resource": getAtt(compactor, "Arn"),
			}}},
		})
	})
	check(t, "three endpoints", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(3)) })
	check(t, "rejected-traffic flow log", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EC2::FlowLog"), map[string]any{
			"ResourceType": "VPC", "TrafficType": "REJECT", "LogDestinationType": "cloud-watch-logs",
		})
	})

	// The Lambda endpoint admits produce only, on 443.
	produceSG := s.logicalID(t, "AWS::EC2::SecurityGroup", "ProduceSecurityGroup")
	var endpointIngress []string
	for _, id := range s.ofType("AWS::EC2::SecurityGroupIngress") {
		p := props(s.resources()[id])
		if strings.HasPrefix(id, "VpcLambdaEndpointSecurityGroup") {
			endpointIngress = append(endpointIngress, id)
			if !reflect.DeepEqual(p["SourceSecurityGroupId"], getAtt(produceSG, "GroupId")) || p["FromPort"] != 443.0 || p["ToPort"] != 443.0 {
				t.Errorf("Lambda endpoint ingress %s = %v, want produce's security group on 443", id, p)
			}
		}
	}
	if len(endpointIngress) != 1 {
		t.Errorf("Lambda endpoint ingress rules = %v, want exactly one (from produce)", endpointIngress)
	}
}

// ---- storage ----

func TestFileSystem(t *testing.T) {
	s := defaultStack(t)
	check(t, "one EFS", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EFS::FileSystem"), jsii.Number(1)) })
	check(t, "EFS encrypted, elastic throughput", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EFS::FileSystem"), map[string]any{
			"Encrypted": true, "ThroughputMode": "elastic", "PerformanceMode": "generalPurpose",
		})
	})
	check(t, "EFS retained", func() {
		s.tpl.HasResource(jsii.String("AWS::EFS::FileSystem"), map[string]any{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
	check(t, "a mount target per AZ", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EFS::MountTarget"), jsii.Number(2)) })
	check(t, "access point /tierlog as uid/gid 1000", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::EFS::AccessPoint"), map[string]any{
			"PosixUser": map[string]any{"Uid": "1000", "Gid": "1000"},
			"RootDirectory": map[string]any{
				"Path":         "/tierlog",
				"CreationInfo": map[string]any{"OwnerUid": "1000", "OwnerGid": "1000", "Permissions": "750"},
			},
		})
	})
	check(t, "one access point", func() { s.tpl.ResourceCountIs(jsii.String("AWS::EFS::AccessPoint"), jsii.Number(1)) })

	// The file system policy: mount for the three roles, write for
	// produce and the compactor only, nothing for anonymous or "*".
	fsID := s.ofType("AWS::EFS::FileSystem")[0]
	policy, ok := props(s.resources()[fsID])["FileSystemPolicy"].(map[string]any)
	if !ok {
		t.Fatalf("file system has no FileSystemPolicy (EFS's default lets any client write)")
	}
	role := func(name string) any { return getAtt(s.logicalID(t, "AWS::IAM::Role", name+"Role"), "Arn") }
	granted := map[string][]any{}
	for _, st := range policy["Statement"].([]any) {
		st := st.(map[string]any)
		if st["Effect"] != "Allow" {
			continue
		}
		principals := strs(st["Principal"].(map[string]any)["AWS"])
		for _, p := range principals {
			if p == "*" {
				t.Errorf("file system policy grants %v to every principal", st["Action"])
			}
		}
		cond, _ := st["Condition"].(map[string]any)
		if !reflect.DeepEqual(cond, map[string]any{"Bool": map[string]any{"elasticfilesystem:AccessedViaMountTarget": "true"}}) {
			t.Errorf("file system policy statement %v lacks the AccessedViaMountTarget condition", st)
		}
		for _, a := range strs(st["Action"]) {
			granted[a.(string)] = append(granted[a.(string)], principals...)
		}
	}
	// Principals sorted by logical ID (@aws-cdk/aws-iam:minimizePolicies).
	want := map[string][]any{
		"elasticfilesystem:ClientMount": {role("Compactor"), role("Fetch"), role("Produce")},
		"elasticfilesystem:ClientWrite": {role("Compactor"), role("Produce")},
	}
	if !reflect.DeepEqual(granted, want) {
		t.Errorf("file system policy grants\n %v\nwant\n %v", granted, want)
	}
}

func TestTable(t *testing.T) {
	s := defaultStack(t)
	check(t, "one table", func() { s.tpl.ResourceCountIs(jsii.String("AWS::DynamoDB::Table"), jsii.Number(1)) })
	check(t, "pk/sk strings, on demand, PITR", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": "pk", "KeyType": "HASH"},
				map[string]any{"AttributeName": "sk", "KeyType": "RANGE"},
			},
			"AttributeDefinitions": []any{
				map[string]any{"AttributeName": "pk", "AttributeType": "S"},
				map[string]any{"AttributeName": "sk", "AttributeType": "S"},
			},
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"DeletionProtectionEnabled":        true,
			"ProvisionedThroughput":            assertions.Match_Absent(),
			"GlobalSecondaryIndexes":           assertions.Match_Absent(),
			"TableName":                        assertions.Match_Absent(),
		})
	})
	check(t, "table retained", func() {
		s.tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
}

func TestBucket(t *testing.T) {
	s := defaultStack(t)
	check(t, "one bucket", func() { s.tpl.ResourceCountIs(jsii.String("AWS::S3::Bucket"), jsii.Number(1)) })
	check(t, "encrypted, all public access blocked", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
			}},
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"OwnershipControls":       map[string]any{"Rules": []any{map[string]any{"ObjectOwnership": "BucketOwnerEnforced"}}},
			"VersioningConfiguration": assertions.Match_Absent(),
			"BucketName":              assertions.Match_Absent(),
		})
	})
	check(t, "bucket retained", func() {
		s.tpl.HasResource(jsii.String("AWS::S3::Bucket"), map[string]any{"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"})
	})
	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	objectsAndBucket := []any{getAtt(bucket, "Arn"), map[string]any{"Fn::Join": []any{"", []any{getAtt(bucket, "Arn"), "/*"}}}}
	check(t, "bucket policy denies non-TLS and TLS < 1.2", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::S3::BucketPolicy"), map[string]any{
			"Bucket": ref(bucket),
			"PolicyDocument": map[string]any{"Statement": assertions.Match_ArrayWith(&[]any{
				assertions.Match_ObjectLike(&map[string]any{
					"Effect": "Deny", "Action": "s3:*", "Principal": map[string]any{"AWS": "*"},
					"Condition": map[string]any{"Bool": map[string]any{"aws:SecureTransport": "false"}},
					"Resource":  objectsAndBucket,
				}),
				assertions.Match_ObjectLike(&map[string]any{
					"Effect": "Deny", "Action": "s3:*", "Principal": map[string]any{"AWS": "*"},
					"Condition": map[string]any{"NumericLessThan": map[string]any{"s3:TlsVersion": 1.2}},
					"Resource":  objectsAndBucket,
				}),
			})},
		})
	})
}

// ---- functions ----

func TestFunctions(t *testing.T) {
	s := defaultStack(t)
	check(t, "three functions", func() { s.tpl.ResourceCountIs(jsii.String("AWS::Lambda::Function"), jsii.Number(3)) })
	table := s.logicalID(t, "AWS::DynamoDB::Table", "Table")
	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	ap := s.logicalID(t, "AWS::EFS::AccessPoint", "HotTierAccessPoint")
	compactor := s.logicalID(t, "AWS::Lambda::Function", "Compactor")
	apArn := map[string]any{"Fn::Join": []any{"", []any{
		"arn:", ref("AWS::Partition"), ":elasticfilesystem:", ref("AWS::Region"), ":", ref("AWS::AccountId"),
		":access-point/", ref(ap),
	}}}
	for _, fn := range []struct {
		name             string
		memory, timeout  int
		compactorEnvWant bool
	}{
		{"Produce", 1024, 25, true},
		{"Fetch", 1024, 25, false},
		{"Compactor", 1024, 300, false},
	} {
		t.Run(fn.name, func(t *testing.T) {
			id := s.logicalID(t, "AWS::Lambda::Function", fn.name)
			env := map[string]any{
				"TIERLOG_HOT_DIR": "/mnt/tierlog",
				"TIERLOG_TABLE":   ref(table),
				"TIERLOG_BUCKET":  ref(bucket),
			}
			if fn.compactorEnvWant {
				env["TIERLOG_COMPACTOR_FUNCTION"] = ref(compactor)
			}
			role := s.logicalID(t, "AWS::IAM::Role", fn.name+"Role")
			sg := s.logicalID(t, "AWS::EC2::SecurityGroup", fn.name+"SecurityGroup")
			logs := s.logicalID(t, "AWS::Logs::LogGroup", fn.name+"Logs")
			got := props(s.resources()[id])
			want := map[string]any{
				"Architectures": []any{"arm64"},
				"Runtime":       "provided.al2023",
				"Handler":       "bootstrap",
				"TracingConfig": map[string]any{"Mode": "Active"},
				"MemorySize":    float64(fn.memory),
				"Timeout":       float64(fn.timeout),
				"Role":          getAtt(role, "Arn"),
				"FileSystemConfigs": []any{map[string]any{
					"Arn": apArn, "LocalMountPath": "/mnt/tierlog",
				}},
				"Environment":   map[string]any{"Variables": env},
				"LoggingConfig": map[string]any{"LogGroup": ref(logs)},
			}
			for k, v := range want {
				if !reflect.DeepEqual(got[k], v) {
					t.Errorf("%s.%s =\n %#v\nwant\n %#v", fn.name, k, got[k], v)
				}
			}
			vpc, _ := got["VpcConfig"].(map[string]any)
			if !reflect.DeepEqual(vpc["SecurityGroupIds"], []any{getAtt(sg, "GroupId")}) {
				t.Errorf("%s security groups = %v, want only its own", fn.name, vpc["SecurityGroupIds"])
			}
			subnets := map[string]bool{}
			for _, sn := range strs(vpc["SubnetIds"]) {
				subnets[sn.(map[string]any)["Ref"].(string)] = true
			}
			for _, sn := range s.ofType("AWS::EC2::Subnet") {
				if !subnets[sn] {
					t.Errorf("%s is not in subnet %s (got %v)", fn.name, sn, vpc["SubnetIds"])
				}
			}
			if _, ok := got["ReservedConcurrentExecutions"]; ok {
				t.Errorf("%s reserves concurrency by default", fn.name)
			}
			// The function waits for the mount targets (Lambda refuses a
			// file system config without an available mount target).
			deps := strs(s.resources()[id]["DependsOn"])
			for _, mt := range s.ofType("AWS::EFS::MountTarget") {
				if !slices.Contains(deps, any(mt)) {
					t.Errorf("%s does not depend on mount target %s", fn.name, mt)
				}
			}
			// It can reach EFS: an ingress on the EFS security group from
			// the function's security group, port 2049.
			found := false
			for _, ing := range s.ofType("AWS::EC2::SecurityGroupIngress") {
				p := props(s.resources()[ing])
				if reflect.DeepEqual(p["SourceSecurityGroupId"], getAtt(sg, "GroupId")) && p["FromPort"] == 2049.0 {
					found = true
				}
			}
			if !found {
				t.Errorf("no NFS (2049) ingress from %s's security group", fn.name)
			}
		})
	}
	check(t, "log groups: one per function, API access, flow log; 30 days", func() {
		s.tpl.ResourceCountIs(jsii.String("AWS::Logs::LogGroup"), jsii.Number(5))
		s.tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 30})
		s.tpl.AllResources(jsii.String("AWS::Logs::LogGroup"), map[string]any{"DeletionPolicy": "Retain"})
	})
}

// policyOf collects every statement of the IAM policies attached to role,
// and its managed policy ARNs.
func (s synthed) policyOf(role string) (statements []map[string]any, managed []any) {
	res := s.resources()
	managed = strs(props(res[role])["ManagedPolicyArns"])
	for _, id := range s.ofType("AWS::IAM::Policy") {
		p := props(res[id])
		if !slices.ContainsFunc(strs(p["Roles"]), func(r any) bool { return reflect.DeepEqual(r, ref(role)) }) {
			continue
		}
		for _, st := range p["PolicyDocument"].(map[string]any)["Statement"].([]any) {
			statements = append(statements, st.(map[string]any))
		}
	}
	if inline, ok := props(res[role])["Policies"]; ok {
		for _, pol := range inline.([]any) {
			for _, st := range pol.(map[string]any)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				statements = append(statements, st.(map[string]any))
			}
		}
	}
	return statements, managed
}

// grants maps each allowed action to a short name of its resource.
func (s synthed) grants(t *testing.T, fn string) (map[string][]string, []any) {
	t.Helper()
	statements, managed := s.policyOf(s.logicalID(t, "AWS::IAM::Role", fn+"Role"))
	names := map[string]string{}
	name := func(v any) string {
		key := fmt.Sprint(v)
		if n, ok := names[key]; ok {
			return n
		}
		return "?" + key
	}
	table := s.logicalID(t, "AWS::DynamoDB::Table", "Table")
	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	names[fmt.Sprint(getAtt(table, "Arn"))] = "table"
	names[fmt.Sprint(getAtt(bucket, "Arn"))] = "bucket"
	names[fmt.Sprint(map[string]any{"Fn::Join": []any{"", []any{getAtt(bucket, "Arn"), "/*"}}})] = "objects"
	if fs := s.ofType("AWS::EFS::FileSystem"); len(fs) > 0 { // none with hotTier=bindMount
		names[fmt.Sprint(getAtt(fs[0], "Arn"))] = "efs"
	}
	names[fmt.Sprint(getAtt(s.logicalID(t, "AWS::Lambda::Function", "Compactor"), "Arn"))] = "compactor"
	names[fmt.Sprint(getAtt(s.logicalID(t, "AWS::Logs::LogGroup", fn+"Logs"), "Arn"))] = "own-logs"
	names["*"] = "*"
	out := map[string][]string{}
	for _, st := range statements {
		if st["Effect"] != "Allow" {
			t.Errorf("%s: unexpected %v statement %v", fn, st["Effect"], st)
			continue
		}
		for _, a := range strs(st["Action"]) {
			for _, r := range strs(st["Resource"]) {
				out[a.(string)] = append(out[a.(string)], name(r))
			}
		}
	}
	for a := range out {
		sort.Strings(out[a])
	}
	return out, managed
}

func TestFunctionPolicies(t *testing.T) {
	s := defaultStack(t)
	common := map[string][]string{
		"logs:CreateLogStream":          {"own-logs"},
		"logs:PutLogEvents":             {"own-logs"},
		"xray:PutTraceSegments":         {"*"},
		"xray:PutTelemetryRecords":      {"*"},
		"elasticfilesystem:ClientMount": {"efs"},
		"dynamodb:GetItem":              {"table"},
		"dynamodb:BatchGetItem":         {"table"},
		"dynamodb:Query":                {"table"},
		"s3:ListBucket":                 {"bucket"},
		"s3:GetObject":                  {"objects"},
	}
	with := func(extra map[string][]string) map[string][]string {
		m := map[string][]string{}
		for k, v := range common {
			m[k] = v
		}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	writeTable := map[string][]string{
		"dynamodb:PutItem": {"table"}, "dynamodb:UpdateItem": {"table"}, "dynamodb:DeleteItem": {"table"},
		"elasticfilesystem:ClientWrite": {"efs"},
	}
	want := map[string]map[string][]string{
		"Produce": with(mergeGrants(writeTable, map[string][]string{
			"s3:DeleteObject":       {"objects"},
			"lambda:InvokeFunction": {"compactor"},
		})),
		"Fetch": with(nil),
		"Compactor": with(mergeGrants(writeTable, map[string][]string{
			"s3:PutObject": {"objects"}, "s3:AbortMultipartUpload": {"objects"}, "s3:DeleteObject": {"objects"},
		})),
	}
	vpcAccess := map[string]any{"Fn::Join": []any{"", []any{
		"arn:", ref("AWS::Partition"), ":iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole",
	}}}
	for fn, w := range want {
		t.Run(fn, func(t *testing.T) {
			got, managed := s.grants(t, fn)
			if !reflect.DeepEqual(got, w) {
				t.Errorf("%s grants:\n%s\nwant:\n%s", fn, fmtGrants(got), fmtGrants(w))
			}
			if !reflect.DeepEqual(managed, []any{vpcAccess}) {
				t.Errorf("%s managed policies = %v, want only AWSLambdaVPCAccessExecutionRole", fn, managed)
			}
			for a, rs := range got {
				if strings.Contains(a, "*") {
					t.Errorf("%s: wildcard action %s", fn, a)
				}
				if slices.Contains(rs, "*") && !strings.HasPrefix(a, "xray:") {
					t.Errorf("%s: %s on every resource; only X-Ray may have '*'", fn, a)
				}
			}
		})
	}

	// The brief's explicit negatives, spelled out.
	fetch, _ := s.grants(t, "Fetch")
	for _, a := range []string{"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "s3:PutObject",
		"s3:DeleteObject", "elasticfilesystem:ClientWrite", "elasticfilesystem:ClientRootAccess", "lambda:InvokeFunction"} {
		if _, ok := fetch[a]; ok {
			t.Errorf("fetch may %s", a)
		}
	}
	produce, _ := s.grants(t, "Produce")
	if _, ok := produce["s3:PutObject"]; ok {
		t.Errorf("produce may s3:PutObject (only the compactor writes the cold tier)")
	}
	for _, fn := range []string{"Produce", "Fetch", "Compactor"} {
		g, _ := s.grants(t, fn)
		if _, ok := g["elasticfilesystem:ClientRootAccess"]; ok {
			t.Errorf("%s has EFS root access", fn)
		}
	}
}

func mergeGrants(a, b map[string][]string) map[string][]string {
	m := map[string][]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func fmtGrants(g map[string][]string) string {
	var lines []string
	for a, r := range g {
		lines = append(lines, fmt.Sprintf("  %-32s %v", a, r))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// ---- API ----

func TestHTTPAPI(t *testing.T) {
	s := defaultStack(t)
	// docs/api.md's routes and the function serving each, written out.
	want := map[string]string{
		"POST /v1/topics":                                        "Produce",
		"DELETE /v1/topics/{topic}":                              "Produce",
		"POST /v1/topics/{topic}/records":                        "Produce",
		"POST /v1/topics/{topic}/partitions/{partition}/records": "Produce",
		"PUT /v1/groups/{group}/offsets":                         "Produce",
		"PATCH /v1/topics/{topic}":                               "Produce",
		"DELETE /v1/groups/{group}":                              "Produce",
		"POST /v1/groups/{group}/offsets/reset":                  "Produce",
		"POST /v1/groups/{group}/members":                        "Produce",
		"POST /v1/groups/{group}/members/{member}/heartbeat":     "Produce",
		"DELETE /v1/groups/{group}/members/{member}":             "Produce",
		"GET /v1/groups":                                         "Fetch",
		"GET /v1/groups/{group}":                                 "Fetch",
		"HEAD /v1/groups":                                        "Fetch",
		"HEAD /v1/groups/{group}":                                "Fetch",
		"GET /v1/topics":                                         "Fetch",
		"GET /v1/topics/{topic}":                                 "Fetch",
		"GET /v1/topics/{topic}/partitions/{partition}/records":  "Fetch",
		"GET /v1/topics/{topic}/partitions/{partition}/offsets":  "Fetch",
		"GET /v1/groups/{group}/offsets":                         "Fetch",
		"GET /v1/health":                                         "Fetch",
		"POST /v1/tokens":                                        "Produce",
		"GET /v1/tokens":                                         "Fetch",
		"HEAD /v1/tokens":                                        "Fetch",
		"DELETE /v1/tokens/{id}":                                 "Produce",
		// HEAD wherever the API serves it (every GET route): API Gateway
		// matches methods exactly, so without these a HEAD would fall to
		// $default and be answered 405.
		"HEAD /v1/topics":         "Fetch",
		"HEAD /v1/topics/{topic}": "Fetch",
		"HEAD /v1/topics/{topic}/partitions/{partition}/records": "Fetch",
		"HEAD /v1/topics/{topic}/partitions/{partition}/offsets": "Fetch",
		"HEAD /v1/groups/{group}/offsets":                        "Fetch",
		"HEAD /v1/health":                                        "Fetch",
		// Subscriptions (docs/api.md "Subscriptions").
		"POST /v1/subscriptions":          "Produce",
		"PATCH /v1/subscriptions/{name}":  "Produce",
		"DELETE /v1/subscriptions/{name}": "Produce",
		"GET /v1/subscriptions":           "Fetch",
		"HEAD /v1/subscriptions":          "Fetch",
		"GET /v1/subscriptions/{name}":    "Fetch",
		"HEAD /v1/subscriptions/{name}":   "Fetch",
		// Anything else reaches fetch's route filter, which answers 404 or
		// 405 in docs/api.md's shape.
		"$default": "Fetch",
	}
	check(t, "one HTTP API", func() {
		s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Api"), jsii.Number(1))
		s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Api"), map[string]any{"ProtocolType": "HTTP"})
	})
	check(t, "route count", func() { s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Route"), jsii.Number(len(want))) })
	check(t, "IAM authorization on every route", func() {
		s.tpl.AllResourcesProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"AuthorizationType": "AWS_IAM"})
	})
	check(t, "no custom authorizer", func() { s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Authorizer"), jsii.Number(0)) })

	fnOf := map[string]string{} // function logical ID -> name
	for _, fn := range []string{"Produce", "Fetch", "Compactor"} {
		fnOf[s.logicalID(t, "AWS::Lambda::Function", fn)] = fn
	}
	res := s.resources()
	got := map[string]string{}
	for _, id := range s.ofType("AWS::ApiGatewayV2::Route") {
		p := props(res[id])
		if p["AuthorizationType"] != "AWS_IAM" {
			t.Errorf("route %v: AuthorizationType %v", p["RouteKey"], p["AuthorizationType"])
		}
		// Target is "integrations/<Ref integration>".
		join := p["Target"].(map[string]any)["Fn::Join"].([]any)[1].([]any)
		integ := props(res[join[1].(map[string]any)["Ref"].(string)])
		if integ["IntegrationType"] != "AWS_PROXY" || integ["PayloadFormatVersion"] != "2.0" {
			t.Errorf("route %v: integration %v, want AWS_PROXY payload 2.0", p["RouteKey"], integ)
		}
		fnID := integ["IntegrationUri"].(map[string]any)["Fn::GetAtt"].([]any)[0].(string)
		got[p["RouteKey"].(string)] = fnOf[fnID]
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("routes -> functions:\n %v\nwant\n %v", got, want)
	}
	if len(Routes) != len(want)-1 {
		t.Errorf("routes_gen.go Routes has %d entries, want %d (and $default)", len(Routes), len(want)-1)
	}
	check(t, "the $default route needs IAM authorization too", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{
			"RouteKey": "$default", "AuthorizationType": "AWS_IAM",
		})
	})

	check(t, "only produce and fetch are integrated", func() {
		s.tpl.ResourceCountIs(jsii.String("AWS::ApiGatewayV2::Integration"), jsii.Number(2))
	})
	check(t, "API Gateway may invoke produce and fetch, per route", func() {
		s.tpl.ResourcePropertiesCountIs(jsii.String("AWS::Lambda::Permission"), map[string]any{
			"Principal": "apigateway.amazonaws.com", "Action": "lambda:InvokeFunction",
		}, jsii.Number(len(want)))
	})
	apiLogs := s.logicalID(t, "AWS::Logs::LogGroup", "ApiAccessLogs")
	check(t, "default stage auto-deploys with a JSON access log", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
			"StageName":  "$default",
			"AutoDeploy": true,
			"AccessLogSettings": map[string]any{
				"DestinationArn": getAtt(apiLogs, "Arn"),
				"Format":         assertions.Match_StringLikeRegexp(jsii.String(`^\{"requestId":"\$context\.requestId".*"userArn":"\$context\.identity\.userArn".*\}$`)),
			},
		})
	})
}

// ---- schedule, alarms, outputs ----

func TestCompactorSchedule(t *testing.T) {
	s := defaultStack(t)
	compactor := s.logicalID(t, "AWS::Lambda::Function", "Compactor")
	check(t, "one rule", func() { s.tpl.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(1)) })
	check(t, "rate(1 minute) -> compactor", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
			"ScheduleExpression": "rate(1 minute)",
			"State":              "ENABLED",
			"Targets":            []any{map[string]any{"Arn": getAtt(compactor, "Arn"), "Id": assertions.Match_AnyValue()}},
		})
	})
	check(t, "EventBridge may invoke the compactor", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
			"Action": "lambda:InvokeFunction", "Principal": "events.amazonaws.com",
			"FunctionName": getAtt(compactor, "Arn"),
		})
	})
}

func TestAlarms(t *testing.T) {
	s := defaultStack(t)
	check(t, "nine alarms", func() { s.tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(9)) })
	for fn, metric := range map[string]string{"fetch": "DamagedReads", "produce": "DamagedReads", "compactor": "SegmentsQuarantined"} {
		check(t, fn+" "+metric, func() {
			s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
				"Namespace":          "tierlog",
				"MetricName":         metric,
				"Dimensions":         []any{map[string]any{"Name": "Function", "Value": fn}},
				"Statistic":          "Sum",
				"Period":             300,
				"Threshold":          1,
				"ComparisonOperator": "GreaterThanOrEqualToThreshold",
				"TreatMissingData":   "notBreaching",
			})
		})
	}
	for _, fn := range []string{"Produce", "Fetch", "Compactor"} {
		id := s.logicalID(t, "AWS::Lambda::Function", fn)
		for _, metric := range []string{"Errors", "Throttles"} {
			check(t, fn+" "+metric, func() {
				s.tpl.HasResourceProperties(jsii.String("AWS::CloudWatch::Alarm"), map[string]any{
					"Namespace":          "AWS/Lambda",
					"MetricName":         metric,
					"Dimensions":         []any{map[string]any{"Name": "FunctionName", "Value": ref(id)}},
					"Statistic":          "Sum",
					"Period":             300,
					"Threshold":          1,
					"EvaluationPeriods":  1,
					"ComparisonOperator": "GreaterThanOrEqualToThreshold",
					"TreatMissingData":   "notBreaching",
				})
			})
		}
	}
}

func TestOutputs(t *testing.T) {
	s := defaultStack(t)
	api := s.logicalID(t, "AWS::ApiGatewayV2::Api", "Api")
	for name, value := range map[string]any{
		"ApiUrl":                getAtt(api, "ApiEndpoint"),
		"TableName":             ref(s.logicalID(t, "AWS::DynamoDB::Table", "Table")),
		"BucketName":            ref(s.logicalID(t, "AWS::S3::Bucket", "Bucket")),
		"FileSystemId":          ref(s.ofType("AWS::EFS::FileSystem")[0]),
		"CompactorFunctionName": ref(s.logicalID(t, "AWS::Lambda::Function", "Compactor")),
	} {
		check(t, "output "+name, func() { s.tpl.HasOutput(jsii.String(name), map[string]any{"Value": value}) })
	}
	// The execute-api ARN and the example policies, with CloudFormation's
	// Fn::Join flattened (a Ref shown as <Ref:X>).
	arn := "arn:<Ref:AWS::Partition>:execute-api:<Ref:AWS::Region>:<Ref:AWS::AccountId>:<Ref:" + api + ">"
	outputs := s.json["Outputs"].(map[string]any)
	for name, want := range map[string]string{
		"ApiArn": arn,
		"ExampleTopicPolicyStatement": `{"Effect":"Allow","Action":"execute-api:Invoke","Resource":[` +
			`"` + arn + `/$default/*/v1/topics/TOPIC","` + arn + `/$default/*/v1/topics/TOPIC/*"]}`,
		"ExampleTopicReadOnlyPolicyStatement": `{"Effect":"Allow","Action":"execute-api:Invoke","Resource":[` +
			`"` + arn + `/$default/GET/v1/topics/TOPIC","` + arn + `/$default/GET/v1/topics/TOPIC/*",` +
			`"` + arn + `/$default/HEAD/v1/topics/TOPIC","` + arn + `/$default/HEAD/v1/topics/TOPIC/*"]}`,
		"TokenAdminPolicyStatement": `{"Effect":"Allow","Action":"execute-api:Invoke","Resource":[` +
			`"` + arn + `/$default/*/v1/tokens","` + arn + `/$default/*/v1/tokens/*"]}`,
	} {
		o, ok := outputs[name].(map[string]any)
		if !ok {
			t.Errorf("no output %s", name)
			continue
		}
		if got := flattenJoin(t, o["Value"]); got != want {
			t.Errorf("output %s:\n %s\nwant\n %s", name, got, want)
		}
		if name != "ApiArn" {
			// With placeholders for the Refs, the statement is JSON IAM takes.
			var stmt struct {
				Effect, Action string
				Resource       []string
			}
			if err := json.Unmarshal([]byte(want), &stmt); err != nil || stmt.Effect != "Allow" || len(stmt.Resource) == 0 {
				t.Errorf("output %s is not a policy statement: %v %+v", name, err, stmt)
			}
		}
	}
}

// flattenJoin renders a CloudFormation string value: a literal, a Ref as
// <Ref:X>, an Fn::Join of those.
func flattenJoin(t *testing.T, v any) string {
	t.Helper()
	switch v := v.(type) {
	case string:
		return v
	case map[string]any:
		if r, ok := v["Ref"].(string); ok {
			return "<Ref:" + r + ">"
		}
		if j, ok := v["Fn::Join"].([]any); ok {
			var parts []string
			for _, p := range j[1].([]any) {
				parts = append(parts, flattenJoin(t, p))
			}
			return strings.Join(parts, j[0].(string))
		}
	}
	t.Fatalf("cannot flatten %v", v)
	return ""
}

// ---- context parameters ----

func TestContextParameters(t *testing.T) {
	get := func(m map[string]any) func(string) any { return func(k string) any { return m[k] } }
	cfg, err := ConfigFromContext(get(map[string]any{
		// strings, as `cdk synth -c key=value` passes them
		"tableName": "tl-meta", "bucketName": "tl-cold-123", "produceMemoryMB": "2048",
		"fetchMemoryMB": "512", "compactorMemoryMB": "3008", "produceTimeoutSeconds": "20",
		"fetchTimeoutSeconds": "28", "compactorTimeoutSeconds": "600", "scheduleMinutes": "5",
		"removalPolicy": "DESTROY", "maxAzs": "1", "logRetentionDays": "7",
		"compactorConcurrency": "2", "compactorInvokeEndpoint": "false", "stackName": "TierlogDev",
	}))
	if err != nil {
		t.Fatal(err)
	}
	s := newStack(t, cfg, false)
	check(t, "table name, destroy", func() {
		s.tpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"DeletionPolicy": "Delete",
			"Properties":     map[string]any{"TableName": "tl-meta", "DeletionProtectionEnabled": false},
		})
	})
	check(t, "bucket name, destroy", func() {
		s.tpl.HasResource(jsii.String("AWS::S3::Bucket"), map[string]any{
			"DeletionPolicy": "Delete", "Properties": map[string]any{"BucketName": "tl-cold-123"},
		})
	})
	check(t, "EFS destroy", func() {
		s.tpl.HasResource(jsii.String("AWS::EFS::FileSystem"), map[string]any{"DeletionPolicy": "Delete"})
	})
	check(t, "schedule", func() {
		s.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{"ScheduleExpression": "rate(5 minutes)"})
	})
	check(t, "one AZ", func() {
		s.tpl.ResourceCountIs(jsii.String("AWS::EC2::Subnet"), jsii.Number(1))
		s.tpl.ResourceCountIs(jsii.String("AWS::EFS::MountTarget"), jsii.Number(1))
	})
	check(t, "log retention", func() {
		s.tpl.AllResourcesProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"RetentionInDays": 7})
	})
	check(t, "no Lambda endpoint", func() {
		s.tpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(2))
		s.tpl.ResourcePropertiesCountIs(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{"VpcEndpointType": "Interface"}, jsii.Number(0))
	})
	for _, fn := range []struct {
		name            string
		memory, timeout int
		reserved        any
	}{
		{"Produce", 2048, 20, nil},
		{"Fetch", 512, 28, nil},
		{"Compactor", 3008, 600, 2.0},
	} {
		p := props(s.resources()[s.logicalID(t, "AWS::Lambda::Function", fn.name)])
		if p["MemorySize"] != float64(fn.memory) || p["Timeout"] != float64(fn.timeout) || p["ReservedConcurrentExecutions"] != fn.reserved {
			t.Errorf("%s: memory %v timeout %v reserved %v, want %d %d %v", fn.name,
				p["MemorySize"], p["Timeout"], p["ReservedConcurrentExecutions"], fn.memory, fn.timeout, fn.reserved)
		}
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := vars["TIERLOG_COMPACTOR_FUNCTION"]; ok {
			t.Errorf("%s has TIERLOG_COMPACTOR_FUNCTION without the Lambda endpoint", fn.name)
		}
	}
	produce, _ := s.grants(t, "Produce")
	if _, ok := produce["lambda:InvokeFunction"]; ok {
		t.Errorf("produce may invoke the compactor although it cannot reach the Lambda API")
	}
	if cfg.StackName != "TierlogDev" {
		t.Errorf("stackName = %q", cfg.StackName)
	}
}

func TestConfigFromContext(t *testing.T) {
	none := func(string) any { return nil }
	cfg, err := ConfigFromContext(none)
	if err != nil || !reflect.DeepEqual(cfg, DefaultConfig()) {
		t.Fatalf("no context: %+v, %v; want the defaults", cfg, err)
	}
	d := DefaultConfig()
	if d.ScheduleMinutes != 1 || !d.Retain() || d.DistDir != "../../dist" || !d.CompactorInvokeEndpoint || d.CompactorConcurrency != 0 ||
		d.Auth != AuthIAM || d.Tokens() {
		t.Errorf("defaults changed: %+v", d)
	}
	// cdk.json values arrive as JSON numbers and booleans.
	cfg, err = ConfigFromContext(func(k string) any {
		return map[string]any{"scheduleMinutes": 10.0, "nag": false, "distDir": "/tmp/d"}[k]
	})
	if err != nil || cfg.ScheduleMinutes != 10 || cfg.Nag || cfg.DistDir != "/tmp/d" {
		t.Errorf("JSON-typed context: %+v, %v", cfg, err)
	}
	// The app's real context path: -c values reach TryGetContext.
	app := awscdk.NewApp(&awscdk.AppProps{Context: &map[string]any{"fetchMemoryMB": "1536"}})
	cfg, err = ConfigFromContext(func(k string) any { return app.Node().TryGetContext(jsii.String(k)) })
	if err != nil || cfg.FetchMemoryMB != 1536 || cfg.ProduceMemoryMB != 1024 {
		t.Errorf("app context: %+v, %v", cfg, err)
	}
	for _, bad := range []map[string]any{
		{"removalPolicy": "snapshot"},
		{"produceMemoryMB": "64"},
		{"fetchTimeoutSeconds": "30"},
		{"compactorTimeoutSeconds": "901"},
		{"scheduleMinutes": "0"},
		{"scheduleMinutes": 1.5},
		{"logRetentionDays": "10"},
		{"maxAzs": "zero"},
		{"maxAzs": "3"},
		{"compactorInvokeEndpoint": "maybe"},
		{"compactorConcurrency": "-1"},
		{"tableName": 7.0},
		{"distDir": ""},
		{"auth": "basic"},
	} {
		if _, err := ConfigFromContext(func(k string) any { return bad[k] }); err == nil {
			t.Errorf("context %v accepted", bad)
		}
	}
}

// TestDistDir covers the code path main.go uses: zips under distDir,
// and the early error when one is missing.
func TestDistDir(t *testing.T) {
	dir := t.TempDir()
	if err := checkDist(dir); err == nil || !strings.Contains(err.Error(), "make build") {
		t.Errorf("checkDist on an empty dir = %v, want an error naming make build", err)
	}
	for _, fn := range []string{FnProduce, FnFetch, FnCompactor} {
		f, err := os.Create(filepath.Join(dir, fn+".zip"))
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		w, _ := zw.CreateHeader(&zip.FileHeader{Name: "bootstrap", Method: zip.Deflate})
		fmt.Fprintf(w, "#!/bin/sh\necho %s\n", fn)
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	if err := checkDist(dir); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DistDir = dir
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir())})
	stack := NewTierlogStack(app, jsii.String("TierlogDist"), &TierlogStackProps{Config: cfg})
	tpl := assertions.Template_FromStack(stack, nil)
	// Three distinct zips, three distinct assets.
	keys := map[any]bool{}
	for _, r := range *tpl.FindResources(jsii.String("AWS::Lambda::Function"), nil) {
		code := (*r)["Properties"].(map[string]any)["Code"].(map[string]any)
		keys[code["S3Key"]] = true
		if !strings.HasSuffix(fmt.Sprint(code["S3Key"]), ".zip") {
			t.Errorf("code key %v is not a zip asset", code["S3Key"])
		}
	}
	if len(keys) != 3 {
		t.Errorf("function code keys = %v, want 3 distinct", keys)
	}
}

// ---- cdk-nag ----

// TestNagAwsSolutions applies the AwsSolutions pack and requires no
// unsuppressed error and no warning: every finding is either fixed or
// suppressed with its reason in nag.go.
func TestNagAwsSolutions(t *testing.T) {
	s := newStack(t, DefaultConfig(), true)
	ann := assertions.Annotations_FromStack(s.stack)
	anyNag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, m := range *ann.FindError(jsii.String("*"), anyNag) {
		t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
	}
	for _, m := range *ann.FindWarning(jsii.String("*"), anyNag) {
		t.Errorf("cdk-nag warning at %s: %v", *m.Id, m.Entry.Data)
	}
	// Nor any other warning (CDK's own, e.g. ignored egress rules).
	for _, m := range *ann.FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		t.Errorf("warning at %s: %v", *m.Id, m.Entry.Data)
	}

	// The same stack with the Lambda endpoint off must pass too.
	cfg := DefaultConfig()
	cfg.CompactorInvokeEndpoint = false
	cfg.RemovalPolicy = "destroy"
	s2 := newStack(t, cfg, true)
	for _, m := range *assertions.Annotations_FromStack(s2.stack).FindError(jsii.String("*"), anyNag) {
		t.Errorf("cdk-nag error (no endpoint, destroy) at %s: %v", *m.Id, m.Entry.Data)
	}
}

// TestNagSuppressionsAreExactlyThese pins the suppressions: adding one
// means adding it here, next to its reason in nag.go.
func TestNagSuppressionsAreExactlyThese(t *testing.T) {
	s := defaultStack(t)
	got := map[string][]string{}
	for id, r := range s.resources() {
		md, _ := r["Metadata"].(map[string]any)
		nag, _ := md["cdk_nag"].(map[string]any)
		rules, _ := nag["rules_to_suppress"].([]any)
		for _, rule := range rules {
			rule := rule.(map[string]any)
			reason, _ := rule["reason"].(string)
			if len(reason) < 100 {
				t.Errorf("%s: suppression %v has no real reason: %q", id, rule["id"], reason)
			}
			entry := rule["id"].(string)
			if at, ok := rule["applies_to"]; ok {
				entry += fmt.Sprint(at)
			}
			got[id] = append(got[id], entry)
		}
	}
	for id := range got {
		sort.Strings(got[id])
	}
	bucket := s.logicalID(t, "AWS::S3::Bucket", "Bucket")
	want := map[string][]string{bucket: {"AwsSolutions-S1"}}
	for _, fn := range []string{"Produce", "Fetch", "Compactor"} {
		role := s.logicalID(t, "AWS::IAM::Role", fn+"Role")
		suppressions := []string{
			"AwsSolutions-IAM4[Policy::arn:<AWS::Partition>:iam::aws:policy/service-role/AWSLambdaVPCAccessExecutionRole]",
			"AwsSolutions-IAM5[Resource::*]",
			`AwsSolutions-IAM5[map[regex:/^Resource::<Bucket[0-9A-F]{8}\.Arn>\/\*$/]]`,
		}
		want[role] = suppressions
		// applyToChildren: the role's default policy carries them too.
		want[s.logicalID(t, "AWS::IAM::Policy", fn+"RoleDefaultPolicy")] = suppressions
	}
	for id := range want {
		sort.Strings(want[id])
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nag suppressions:\n %v\nwant\n %v", got, want)
	}
}

// TestTokenAuthStack: with auth=tokens the functions verify tokens
// (TIERLOG_AUTH=tokens on produce and fetch), API Gateway authorizes only
// the token routes (IAM: the bootstrap), and cdk-nag passes with the one
// suppression that says so.
func TestTokenAuthStack(t *testing.T) {
	cfg, err := ConfigFromContext(func(k string) any { return map[string]any{"auth": "Tokens"}[k] })
	if err != nil || !cfg.Tokens() {
		t.Fatalf("auth=Tokens: %+v %v", cfg, err)
	}
	s := newStack(t, cfg, true)
	res := s.resources()
	n := 0
	for _, id := range s.ofType("AWS::ApiGatewayV2::Route") {
		p := props(res[id])
		key := p["RouteKey"].(string)
		want := "NONE"
		if strings.Contains(key, " /v1/tokens") {
			want = "AWS_IAM"
			n++
		}
		if got, _ := p["AuthorizationType"].(string); got != want && !(want == "NONE" && got == "") {
			t.Errorf("route %s: AuthorizationType %q, want %s", key, got, want)
		}
	}
	if n != 4 {
		t.Errorf("%d IAM-authorized token routes, want 4 (POST, GET, HEAD /v1/tokens, DELETE /v1/tokens/{id})", n)
	}
	for fn, want := range map[string]any{"Produce": "tokens", "Fetch": "tokens", "Compactor": nil} {
		p := props(res[s.logicalID(t, "AWS::Lambda::Function", fn)])
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		if got := vars["TIERLOG_AUTH"]; got != want {
			t.Errorf("%s: TIERLOG_AUTH %v, want %v", fn, got, want)
		}
	}
	anyNag := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	for _, m := range *assertions.Annotations_FromStack(s.stack).FindError(jsii.String("*"), anyNag) {
		t.Errorf("cdk-nag error at %s: %v", *m.Id, m.Entry.Data)
	}
	// The IAM stack's functions verify nothing: API Gateway does.
	d := defaultStack(t)
	for _, fn := range []string{"Produce", "Fetch"} {
		vars := props(d.resources()[d.logicalID(t, "AWS::Lambda::Function", fn)])["Environment"].(map[string]any)["Variables"].(map[string]any)
		if _, ok := vars["TIERLOG_AUTH"]; ok {
			t.Errorf("auth=iam: %s has TIERLOG_AUTH", fn)
		}
	}
}
