package lambdafn

import (
	"log/slog"
	"strings"
	"testing"
	"time"
)

func mapEnv(m map[string]string) func(string) string { return func(k string) string { return m[k] } }

func TestLoadEnv(t *testing.T) {
	e, err := LoadEnv(mapEnv(map[string]string{EnvTable: "t", EnvBucket: "b"}))
	if err != nil {
		t.Fatal(err)
	}
	if e.HotDir != DefaultHotDir || e.Table != "t" || e.Bucket != "b" || e.Prefix != "" || e.CompactorFunction != "" ||
		e.LogLevel != slog.LevelInfo || e.CreateResources || e.NotifyTimeout != DefaultNotifyTimeout || e.CacheBytes != 0 ||
		e.Auth != AuthIAM {
		t.Fatalf("defaults: %+v", e)
	}
	e, err = LoadEnv(mapEnv(map[string]string{
		EnvTable: "t", EnvBucket: "b", EnvHotDir: "/efs", EnvPrefix: "p", EnvCompactorFunction: "c",
		EnvLogLevel: "DEBUG", EnvCreateResources: "1", EnvCacheBytes: "1048576", EnvCompactGrace: "1m",
		EnvLeaseTTL: "5s", EnvNotifyTimeout: "500ms", EnvAnswerCacheBytes: "-1", EnvAuth: "tokens",
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := Env{HotDir: "/efs", Table: "t", Bucket: "b", Prefix: "p", CompactorFunction: "c", LogLevel: slog.LevelDebug,
		CreateResources: true, CacheBytes: 1 << 20, CompactGrace: time.Minute, LeaseTTL: 5 * time.Second,
		NotifyTimeout: 500 * time.Millisecond, AnswerCacheBytes: -1, Auth: AuthTokens}
	if e != want {
		t.Fatalf("got %+v\nwant %+v", e, want)
	}
	// Lambda's advanced logging level applies when ours is not set.
	e, _ = LoadEnv(mapEnv(map[string]string{EnvTable: "t", EnvBucket: "b", "AWS_LAMBDA_LOG_LEVEL": "WARN"}))
	if e.LogLevel != slog.LevelWarn {
		t.Fatalf("AWS_LAMBDA_LOG_LEVEL: %v", e.LogLevel)
	}
	e, _ = LoadEnv(mapEnv(map[string]string{EnvTable: "t", EnvBucket: "b", EnvLogLevel: "trace"}))
	if e.LogLevel != LevelTrace {
		t.Fatalf("trace: %v", e.LogLevel)
	}
}

func TestLoadEnvErrors(t *testing.T) {
	_, err := LoadEnv(mapEnv(map[string]string{
		EnvLogLevel: "loud", EnvCreateResources: "maybe", EnvCacheBytes: "-1", EnvCompactGrace: "soon", EnvLeaseTTL: "0s",
		EnvAnswerCacheBytes: "lots", EnvAuth: "basic",
	}))
	if err == nil {
		t.Fatal("no error")
	}
	// Every problem is reported at once.
	for _, want := range []string{EnvTable, EnvBucket, EnvLogLevel, EnvCreateResources, EnvCacheBytes, EnvCompactGrace, EnvLeaseTTL, EnvAnswerCacheBytes, EnvAuth} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}
