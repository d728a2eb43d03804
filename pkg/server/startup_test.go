package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/server"
)

// A metadata journal emptied while the server was down (robustness review
// F9: every topic vanished, silently) is reported loudly at the next start:
// the journal's loss and every topic directory the metadata no longer knows.
func TestStartupReportsLostMetadata(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open := func(log *bytes.Buffer) *server.Server {
		t.Helper()
		cfg := server.Config{DataDir: dir, CompactInterval: time.Hour}
		if log != nil {
			cfg.Logger = slog.New(slog.NewTextHandler(log, nil))
		}
		s, err := server.Open(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open(nil)
	if _, err := s.Broker.CreateTopic(ctx, broker.TopicSpec{Name: "kept"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Broker.ProducePartition(ctx, "kept", 0, batchOf(3, 10)); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	journals, _ := filepath.Glob(filepath.Join(dir, "meta", "journal-*.log"))
	if len(journals) == 0 {
		t.Fatal("no journal to damage")
	}
	for _, j := range journals {
		if err := os.Truncate(j, 0); err != nil {
			t.Fatal(err)
		}
	}

	var log bytes.Buffer
	s = open(&log)
	defer s.Close()
	out := log.String()
	for _, want := range []string{"lost committed data", "a topic the metadata does not know", "kept~"} {
		if !strings.Contains(out, want) {
			t.Errorf("startup log lacks %q:\n%s", want, out)
		}
	}
}
