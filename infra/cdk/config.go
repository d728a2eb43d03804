package main

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Config is everything a deployment may choose. Every field has a
// context key (the `json` tag: `cdk synth -c fetchMemoryMB=2048`, or the
// "context" object of cdk.json); defaults and validation live in one
// place, DefaultConfig and Config.validate.
type Config struct {
	// StackName is the CloudFormation stack name (default "Tierlog").
	StackName string `json:"stackName"`
	// TableName and BucketName are physical names. Empty (the default)
	// lets CloudFormation generate unique ones, so two stacks can share an
	// account; set them to adopt fixed names.
	TableName  string `json:"tableName"`
	BucketName string `json:"bucketName"`

	// DistDir holds produce.zip, fetch.zip and compactor.zip (each with a
	// `bootstrap` executable for linux/LambdaArch), relative to infra/cdk.
	DistDir string `json:"distDir"`

	// LambdaArch is the functions' architecture, in Go's GOARCH spelling
	// so it can be the Makefile's LAMBDA_GOARCH: "arm64" (default,
	// Graviton) or "amd64" (x86_64). It must match the zips. make
	// deploy-local passes LAMBDA_GOARCH, so x86 hosts running LocalStack
	// need neither QEMU nor LAMBDA_IGNORE_ARCHITECTURE.
	LambdaArch string `json:"lambdaArch"`

	// Memory in MB and timeout in seconds of each function. API Gateway
	// gives up on an integration after 30 s, so the two API functions
	// stay below it (fetch long-polls up to 20 s).
	ProduceMemoryMB         int `json:"produceMemoryMB"`
	FetchMemoryMB           int `json:"fetchMemoryMB"`
	CompactorMemoryMB       int `json:"compactorMemoryMB"`
	ProduceTimeoutSeconds   int `json:"produceTimeoutSeconds"`
	FetchTimeoutSeconds     int `json:"fetchTimeoutSeconds"`
	CompactorTimeoutSeconds int `json:"compactorTimeoutSeconds"`

	// CompactorConcurrency reserves that many concurrent executions for
	// the compactor and caps it there; 0 (default) reserves none. Keep 0
	// on accounts with the new-account limit of 10 concurrent executions:
	// Lambda refuses any reservation that leaves fewer than 10 unreserved.
	CompactorConcurrency int `json:"compactorConcurrency"`

	// ScheduleMinutes is the period of the EventBridge rule that runs the
	// compactor (default 1).
	ScheduleMinutes int `json:"scheduleMinutes"`

	// RemovalPolicy is "retain" (default: the table, bucket, file system
	// and log groups outlive `cdk destroy`) or "destroy" (for throw-away
	// stacks; CloudFormation still cannot delete a non-empty bucket).
	RemovalPolicy string `json:"removalPolicy"`

	// MaxAzs is how many availability zones (1 or 2) get an isolated
	// subnet, an EFS mount target and (with CompactorInvokeEndpoint) an
	// endpoint ENI. The template is environment-agnostic (no account or
	// region at synth, so synth stays offline), and CDK can then only
	// pick the first two zones of Fn::GetAZs.
	MaxAzs int `json:"maxAzs"`

	// LogRetentionDays for the function, API access and flow log groups;
	// one of CloudWatch's allowed values, 0 meaning never expire.
	LogRetentionDays int `json:"logRetentionDays"`

	// CompactorInvokeEndpoint adds a Lambda interface VPC endpoint so the
	// produce function (in isolated subnets, no NAT) can send the async
	// "segment rolled" invoke, and sets TIERLOG_COMPACTOR_FUNCTION. It
	// costs an endpoint ENI per AZ per hour. false leaves
	// TIERLOG_COMPACTOR_FUNCTION unset and the schedule alone drives
	// compaction.
	CompactorInvokeEndpoint bool `json:"compactorInvokeEndpoint"`

	// DeliverTargets are the Lambda functions (names or ARNs, comma
	// separated) that subscriptions may invoke. Non-empty adds the
	// delivery function (docs/subscriptions.md): woken by produce after
	// committed records and by the schedule, allowed to invoke exactly
	// these functions and nothing else. Empty (the default): no delivery
	// function. Webhook targets are not reachable from the isolated
	// subnets; they are for `tierlog serve`.
	DeliverTargets string `json:"deliverTargets"`
	// DeliverMemoryMB and DeliverTimeoutSeconds size the delivery
	// function; a pass ends before the timeout and the next wake-up or
	// the schedule goes on.
	DeliverMemoryMB       int `json:"deliverMemoryMB"`
	DeliverTimeoutSeconds int `json:"deliverTimeoutSeconds"`

	// HotTier is where the functions' hot tier (TIERLOG_HOT_DIR, always
	// HotDir) comes from: "efs" (default) mounts an EFS access point there,
	// inside a VPC of isolated subnets; "bindMount" leaves out EFS and
	// everything that exists only for it (the VPC and its subnets, flow
	// log and endpoints, the mount targets, the access point, the security
	// groups) and runs the functions outside any VPC, for LocalStack, whose
	// compose file bind-mounts a host directory at HotDir into every Lambda
	// container (localstack/README.md, way A). A bindMount stack on AWS
	// has no hot tier: /mnt/tierlog does not exist there.
	HotTier string `json:"hotTier"`

	// Auth is how the API authorizes requests (docs/auth.md): "iam"
	// (default) puts IAM authorization on every route; "tokens" leaves the
	// routes to the functions, which require an access token
	// (TIERLOG_AUTH=tokens), and keeps IAM authorization on the token
	// routes only: an IAM-signed call makes the first admin token.
	Auth string `json:"auth"`

	// Nag applies the cdk-nag AwsSolutions checks at synth (main.go only;
	// errors fail `cdk synth` and `cdk deploy`). Default true.
	Nag bool `json:"nag"`
}

// DefaultConfig returns the defaults every unset context key takes.
func DefaultConfig() Config {
	return Config{
		StackName:               "Tierlog",
		DistDir:                 "../../dist",
		LambdaArch:              "arm64",
		ProduceMemoryMB:         1024,
		FetchMemoryMB:           1024,
		CompactorMemoryMB:       1024,
		ProduceTimeoutSeconds:   25,
		FetchTimeoutSeconds:     25,
		CompactorTimeoutSeconds: 300,
		DeliverMemoryMB:         1024,
		DeliverTimeoutSeconds:   300,
		ScheduleMinutes:         1,
		RemovalPolicy:           "retain",
		MaxAzs:                  2,
		LogRetentionDays:        30,
		CompactorInvokeEndpoint: true,
		HotTier:                 HotTierEFS,
		Auth:                    AuthIAM,
		Nag:                     true,
	}
}

// HotTier values (Config.HotTier).
const (
	HotTierEFS       = "efs"
	HotTierBindMount = "bindMount"
)

// Auth values (Config.Auth).
const (
	AuthIAM    = "iam"
	AuthTokens = "tokens"
)

// Tokens reports whether the functions verify access tokens.
func (c Config) Tokens() bool { return c.Auth == AuthTokens }

// EFS reports whether the hot tier is an EFS file system (and so the
// functions run in a VPC).
func (c Config) EFS() bool { return c.HotTier == HotTierEFS }

// deliverTargets splits DeliverTargets into names and ARNs.
func (c Config) deliverTargets() []string {
	var out []string
	for _, t := range strings.Split(c.DeliverTargets, ",") {
		if t = strings.TrimSpace(t); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// Deliver reports whether the stack has the delivery function.
func (c Config) Deliver() bool { return len(c.deliverTargets()) > 0 }

// Retain reports whether stateful resources outlive the stack.
func (c Config) Retain() bool { return c.RemovalPolicy == "retain" }

// allowedRetentionDays are CloudWatch Logs' retention values (0 = never).
var allowedRetentionDays = map[int]string{
	0: "INFINITE", 1: "ONE_DAY", 3: "THREE_DAYS", 5: "FIVE_DAYS", 7: "ONE_WEEK",
	14: "TWO_WEEKS", 30: "ONE_MONTH", 60: "TWO_MONTHS", 90: "THREE_MONTHS",
	120: "FOUR_MONTHS", 150: "FIVE_MONTHS", 180: "SIX_MONTHS", 365: "ONE_YEAR",
	400: "THIRTEEN_MONTHS", 545: "EIGHTEEN_MONTHS", 731: "TWO_YEARS",
	1096: "THREE_YEARS", 1827: "FIVE_YEARS", 2192: "SIX_YEARS",
	2557: "SEVEN_YEARS", 2922: "EIGHT_YEARS", 3288: "NINE_YEARS", 3653: "TEN_YEARS",
}

func (c Config) validate() error {
	var errs []string
	bad := func(format string, a ...any) { errs = append(errs, fmt.Sprintf(format, a...)) }
	if c.StackName == "" {
		bad("stackName is empty")
	}
	if c.DistDir == "" {
		bad("distDir is empty")
	}
	for _, m := range []struct {
		key string
		v   int
	}{{"produceMemoryMB", c.ProduceMemoryMB}, {"fetchMemoryMB", c.FetchMemoryMB}, {"compactorMemoryMB", c.CompactorMemoryMB}} {
		if m.v < 128 || m.v > 10240 {
			bad("%s = %d: Lambda allows 128..10240 MB", m.key, m.v)
		}
	}
	for _, t := range []struct {
		key      string
		v, limit int
	}{
		{"produceTimeoutSeconds", c.ProduceTimeoutSeconds, 29},
		{"fetchTimeoutSeconds", c.FetchTimeoutSeconds, 29},
		{"compactorTimeoutSeconds", c.CompactorTimeoutSeconds, 900},
	} {
		if t.v < 1 || t.v > t.limit {
			bad("%s = %d: want 1..%d (API Gateway waits 30 s; Lambda runs 900 s at most)", t.key, t.v, t.limit)
		}
	}
	if c.DeliverMemoryMB < 128 || c.DeliverMemoryMB > 10240 {
		bad("deliverMemoryMB = %d: Lambda allows 128..10240 MB", c.DeliverMemoryMB)
	}
	if c.DeliverTimeoutSeconds < 10 || c.DeliverTimeoutSeconds > 900 {
		bad("deliverTimeoutSeconds = %d: want 10..900", c.DeliverTimeoutSeconds)
	}
	for _, target := range c.deliverTargets() {
		if strings.ContainsAny(target, "* \t") {
			bad("deliverTargets: %q: want a function name or ARN, without wildcards", target)
		}
	}
	if c.CompactorConcurrency < 0 {
		bad("compactorConcurrency = %d: want >= 0", c.CompactorConcurrency)
	}
	if c.ScheduleMinutes < 1 {
		bad("scheduleMinutes = %d: want >= 1", c.ScheduleMinutes)
	}
	if c.RemovalPolicy != "retain" && c.RemovalPolicy != "destroy" {
		bad("removalPolicy = %q: want retain or destroy", c.RemovalPolicy)
	}
	if c.MaxAzs < 1 || c.MaxAzs > 2 {
		bad("maxAzs = %d: want 1 or 2 (an environment-agnostic stack sees two zones)", c.MaxAzs)
	}
	if c.LambdaArch != "arm64" && c.LambdaArch != "amd64" {
		bad("lambdaArch = %q: want arm64 or amd64 (GOARCH of the zips)", c.LambdaArch)
	}
	if c.Auth != AuthIAM && c.Auth != AuthTokens {
		bad("auth = %q: want %s or %s", c.Auth, AuthIAM, AuthTokens)
	}
	if c.HotTier != HotTierEFS && c.HotTier != HotTierBindMount {
		bad("hotTier = %q: want %s or %s", c.HotTier, HotTierEFS, HotTierBindMount)
	}
	if _, ok := allowedRetentionDays[c.LogRetentionDays]; !ok {
		days := make([]int, 0, len(allowedRetentionDays))
		for d := range allowedRetentionDays {
			days = append(days, d)
		}
		sort.Ints(days)
		bad("logRetentionDays = %d: want one of %v", c.LogRetentionDays, days)
	}
	if len(errs) > 0 {
		return fmt.Errorf("tierlog cdk config: %s", strings.Join(errs, "; "))
	}
	return nil
}

// ConfigFromContext starts from DefaultConfig, overrides each field whose
// context key get returns non-nil, and validates the result. Values may
// be strings (from `-c key=value`) or JSON numbers and booleans (from
// cdk.json).
func ConfigFromContext(get func(key string) any) (Config, error) {
	c := DefaultConfig()
	var errs []string
	str := func(key string, dst *string) {
		switch v := get(key).(type) {
		case nil:
		case string:
			*dst = v
		default:
			errs = append(errs, fmt.Sprintf("%s: want a string, got %T", key, v))
		}
	}
	num := func(key string, dst *int) {
		switch v := get(key).(type) {
		case nil:
		case float64:
			if v != math.Trunc(v) {
				errs = append(errs, fmt.Sprintf("%s = %v: want an integer", key, v))
				return
			}
			*dst = int(v)
		case int:
			*dst = v
		case string:
			n, err := strconv.Atoi(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s = %q: want an integer", key, v))
				return
			}
			*dst = n
		default:
			errs = append(errs, fmt.Sprintf("%s: want an integer, got %T", key, v))
		}
	}
	boolean := func(key string, dst *bool) {
		switch v := get(key).(type) {
		case nil:
		case bool:
			*dst = v
		case string:
			b, err := strconv.ParseBool(strings.TrimSpace(v))
			if err != nil {
				errs = append(errs, fmt.Sprintf("%s = %q: want true or false", key, v))
				return
			}
			*dst = b
		default:
			errs = append(errs, fmt.Sprintf("%s: want a boolean, got %T", key, v))
		}
	}
	str("stackName", &c.StackName)
	str("tableName", &c.TableName)
	str("bucketName", &c.BucketName)
	str("distDir", &c.DistDir)
	str("lambdaArch", &c.LambdaArch)
	c.LambdaArch = strings.ToLower(strings.TrimSpace(c.LambdaArch))
	num("produceMemoryMB", &c.ProduceMemoryMB)
	num("fetchMemoryMB", &c.FetchMemoryMB)
	num("compactorMemoryMB", &c.CompactorMemoryMB)
	num("produceTimeoutSeconds", &c.ProduceTimeoutSeconds)
	num("fetchTimeoutSeconds", &c.FetchTimeoutSeconds)
	num("compactorTimeoutSeconds", &c.CompactorTimeoutSeconds)
	num("compactorConcurrency", &c.CompactorConcurrency)
	num("scheduleMinutes", &c.ScheduleMinutes)
	str("removalPolicy", &c.RemovalPolicy)
	c.RemovalPolicy = strings.ToLower(c.RemovalPolicy)
	num("maxAzs", &c.MaxAzs)
	num("logRetentionDays", &c.LogRetentionDays)
	boolean("compactorInvokeEndpoint", &c.CompactorInvokeEndpoint)
	str("deliverTargets", &c.DeliverTargets)
	num("deliverMemoryMB", &c.DeliverMemoryMB)
	num("deliverTimeoutSeconds", &c.DeliverTimeoutSeconds)
	str("hotTier", &c.HotTier)
	for _, v := range []string{HotTierEFS, HotTierBindMount} {
		if strings.EqualFold(strings.TrimSpace(c.HotTier), v) {
			c.HotTier = v
		}
	}
	str("auth", &c.Auth)
	c.Auth = strings.ToLower(strings.TrimSpace(c.Auth))
	boolean("nag", &c.Nag)
	if len(errs) > 0 {
		return Config{}, fmt.Errorf("tierlog cdk config: %s", strings.Join(errs, "; "))
	}
	if err := c.validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}
