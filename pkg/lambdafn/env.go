package lambdafn

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"
)

// Environment variables the functions read. Never rename them: the CDK app
// and the LocalStack setup set them.
const (
	EnvHotDir            = "TIERLOG_HOT_DIR"            // hot tier (the EFS mount); default /mnt/tierlog
	EnvTable             = "TIERLOG_TABLE"              // DynamoDB table; required
	EnvBucket            = "TIERLOG_BUCKET"             // S3 bucket; required
	EnvPrefix            = "TIERLOG_PREFIX"             // key prefix in the bucket; default none
	EnvCompactorFunction = "TIERLOG_COMPACTOR_FUNCTION" // produce: function to notify on a roll; none: no notice
	EnvDeliverFunction   = "TIERLOG_DELIVER_FUNCTION"   // produce: function to wake when records are committed; none: no wake
	EnvLogLevel          = "TIERLOG_LOG_LEVEL"          // trace|debug|info|warn|error; default AWS_LAMBDA_LOG_LEVEL, else info
	EnvCreateResources   = "TIERLOG_CREATE_RESOURCES"   // 1/true: create table and bucket at init (emulators only)
	EnvCacheBytes        = "TIERLOG_CACHE_BYTES"        // fetch: cold-tier cache budget; default 256 MiB
	EnvAnswerCacheBytes  = "TIERLOG_ANSWER_CACHE_BYTES" // fetch: budget of fetch answers kept for readers asking again; default 64 MiB, negative: none
	EnvCompactGrace      = "TIERLOG_COMPACT_GRACE"      // compactor: hot files of tiered segments stay this long; default 30s
	EnvLeaseTTL          = "TIERLOG_LEASE_TTL"          // lease lifetime without a commit; default 10s
	EnvNotifyTimeout     = "TIERLOG_NOTIFY_TIMEOUT"     // produce: bound on the compactor invoke; default 2s
	EnvAuth              = "TIERLOG_AUTH"               // iam (default): API Gateway's IAM auth alone; tokens: access tokens (docs/auth.md)

	// DefaultHotDir is where the functions mount EFS.
	DefaultHotDir = "/mnt/tierlog"
	// DefaultNotifyTimeout bounds the async invoke produce sends on a roll.
	DefaultNotifyTimeout = 2 * time.Second
)

// LevelTrace is below debug: the X-Ray SDK's own chatter (a line per
// subsegment) appears only at this level.
const LevelTrace = slog.LevelDebug - 4

// Env is a function's configuration, read from the environment by LoadEnv.
type Env struct {
	HotDir            string
	Table             string
	Bucket            string
	Prefix            string
	CompactorFunction string
	DeliverFunction   string
	LogLevel          slog.Level
	CreateResources   bool
	CacheBytes        int64         // 0: the server's default
	AnswerCacheBytes  int64         // 0: the server's default; < 0: none
	CompactGrace      time.Duration // 0: the server's default
	LeaseTTL          time.Duration // 0: the server's default
	NotifyTimeout     time.Duration
	// Auth is AuthIAM or AuthTokens.
	Auth string
}

// Auth modes of the functions (EnvAuth).
const (
	// AuthIAM: API Gateway authorizes every route with IAM; the functions
	// check no tokens (the token routes still manage them).
	AuthIAM = "iam"
	// AuthTokens: the functions require an access token on every route
	// but GET /v1/health, except requests API Gateway authorized with IAM
	// (the token routes, which the stack keeps IAM-authorized).
	AuthTokens = "tokens"
)

// LoadEnv reads Env with getenv (os.Getenv when nil). Every problem is
// reported, joined, so one failed cold start shows them all.
func LoadEnv(getenv func(string) string) (Env, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{
		HotDir:            getenv(EnvHotDir),
		Table:             getenv(EnvTable),
		Bucket:            getenv(EnvBucket),
		Prefix:            getenv(EnvPrefix),
		CompactorFunction: getenv(EnvCompactorFunction),
		DeliverFunction:   getenv(EnvDeliverFunction),
		NotifyTimeout:     DefaultNotifyTimeout,
		Auth:              getenv(EnvAuth),
	}
	if e.HotDir == "" {
		e.HotDir = DefaultHotDir
	}
	var errs []error
	switch e.Auth {
	case "":
		e.Auth = AuthIAM
	case AuthIAM, AuthTokens:
	default:
		errs = append(errs, fmt.Errorf("%s=%q: want %s or %s", EnvAuth, e.Auth, AuthIAM, AuthTokens))
	}
	if e.Table == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvTable))
	}
	if e.Bucket == "" {
		errs = append(errs, fmt.Errorf("%s is required", EnvBucket))
	}
	level := getenv(EnvLogLevel)
	if level == "" {
		level = getenv("AWS_LAMBDA_LOG_LEVEL") // set by Lambda's advanced logging controls
	}
	if level != "" {
		l, err := parseLevel(level)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", EnvLogLevel, err))
		}
		e.LogLevel = l
	}
	if v := getenv(EnvCreateResources); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want true or false", EnvCreateResources, v))
		}
		e.CreateResources = b
	}
	if v := getenv(EnvCacheBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive number of bytes", EnvCacheBytes, v))
		}
		e.CacheBytes = n
	}
	if v := getenv(EnvAnswerCacheBytes); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q: want a number of bytes (negative: none)", EnvAnswerCacheBytes, v))
		}
		e.AnswerCacheBytes = n
	}
	for _, d := range []struct {
		name string
		dst  *time.Duration
	}{{EnvCompactGrace, &e.CompactGrace}, {EnvLeaseTTL, &e.LeaseTTL}, {EnvNotifyTimeout, &e.NotifyTimeout}} {
		v := getenv(d.name)
		if v == "" {
			continue
		}
		t, err := time.ParseDuration(v)
		if err != nil || t <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: want a positive duration such as 30s", d.name, v))
			continue
		}
		*d.dst = t
	}
	if err := errors.Join(errs...); err != nil {
		return e, fmt.Errorf("lambdafn: configuration: %w", err)
	}
	return e, nil
}

func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "trace":
		return LevelTrace, nil
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error", "fatal":
		return slog.LevelError, nil
	}
	return slog.LevelInfo, fmt.Errorf("unknown log level %q (want trace, debug, info, warn or error)", s)
}
