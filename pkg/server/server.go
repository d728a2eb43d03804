// Package server assembles a running tierlog from configuration: the
// metadata and object store adapters, the broker, the compactor, the HTTP
// handler and the metrics. `tierlog serve` and the Lambda functions are thin
// mains over it.
//
// Backends:
//
//   - "local": everything under one data dir: <data>/meta (embedded
//     journal), <data>/topics (hot tier), <data>/cold (cold tier). One
//     process owns the dir and keeps partition leases between batches.
//   - "aws": DynamoDB for metadata, S3 for the cold tier, a hot dir that
//     several processes (or Lambda containers) may share. Each batch
//     acquires and releases its partition's lease, so processes interleave.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/smithy-go/middleware"

	"github.com/tierlog/tierlog/pkg/api"
	"github.com/tierlog/tierlog/pkg/auth"
	"github.com/tierlog/tierlog/pkg/broker"
	"github.com/tierlog/tierlog/pkg/compactor"
	"github.com/tierlog/tierlog/pkg/console"
	"github.com/tierlog/tierlog/pkg/meta"
	"github.com/tierlog/tierlog/pkg/meta/local"
	"github.com/tierlog/tierlog/pkg/metrics"
	"github.com/tierlog/tierlog/pkg/objstore"
	objlocal "github.com/tierlog/tierlog/pkg/objstore/local"
	"github.com/tierlog/tierlog/pkg/segment"
	"github.com/tierlog/tierlog/pkg/subscribe"
	"github.com/tierlog/tierlog/pkg/tier"
)

// Backend names.
const (
	BackendLocal = "local"
	BackendAWS   = "aws"
)

// Auth modes (Config.Auth; docs/auth.md).
const (
	// AuthNone admits every request; the token routes still manage
	// tokens, so that they can be made before auth is turned on.
	AuthNone = "none"
	// AuthTokens requires an access token on every route but GET
	// /v1/health.
	AuthTokens = "tokens"
)

// DefaultBodyReadTimeout is how long the server waits for a request body
// unless Config.BodyReadTimeout says otherwise (`tierlog serve
// --body-read-timeout`, env TIERLOG_BODY_READ_TIMEOUT).
const DefaultBodyReadTimeout = 30 * time.Second

// Timeouts of HTTPServer's connections.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Config configures a Server. Zero values take the documented defaults.
type Config struct {
	Backend string // "local" (default) or "aws"

	// local
	DataDir string // default ./.tierlog

	// aws
	HotDir          string // shared hot tier directory (EFS in AWS)
	Table           string // DynamoDB table
	Bucket          string // S3 bucket
	Prefix          string // key prefix in the bucket
	CreateResources bool   // create the table and bucket if absent
	// APIOptions are added to the DynamoDB and S3 clients' middleware
	// stacks (the Lambda functions add X-Ray instrumentation here).
	APIOptions []func(*middleware.Stack) error

	// Owner names this process as a lease owner. Default: "local" for the
	// local backend; a unique id per process for aws.
	Owner string
	// ReleaseEachBatch: default false for local, true for aws.
	ReleaseEachBatch *bool
	// Detach runs a produce's work after its answer: for a writer alone
	// (its lease parked), its round's checkpoint (partition.Config.Detach).
	// Nil: with ReleaseEachBatch, on a goroutine Close waits for;
	// otherwise before the answer. The Lambda functions set their own
	// (pkg/lambdafn).
	Detach func(fn func())
	// LeaseTTL is how long a partition lease lives without a commit.
	// Default 10s.
	LeaseTTL time.Duration
	// BusyWait bounds how long a produce waits for a partition another
	// writer holds. 0 means partition.DefaultBusyWait.
	BusyWait time.Duration
	// CompactInterval is the compactor timer; 0 means 10s, < 0 disables it.
	CompactInterval time.Duration
	// CompactGrace is how long hot files of tiered segments stay. Default 30s.
	CompactGrace time.Duration
	// CacheBytes budgets the cold-tier cache. Default
	// tier.DefaultCacheBytes (256 MiB).
	CacheBytes int64
	// AnswerCacheBytes budgets the encoded fetch answers kept for readers
	// that ask the same again (broker.Config.AnswerCacheBytes). 0 means
	// broker.DefaultAnswerCacheBytes (64 MiB); < 0 keeps none.
	AnswerCacheBytes int64
	// BodyReadTimeout bounds the reading of one request body: a body
	// still arriving after it is cut with 408 request_timeout and nothing
	// is applied. 0 means DefaultBodyReadTimeout; < 0 means no bound.
	// Only connections served by net/http have read deadlines: behind
	// API Gateway the body arrives whole and this does nothing.
	BodyReadTimeout time.Duration
	// DisableStreaming answers a fetch with Accept: text/event-stream as a
	// plain fetch instead of a stream (docs/api.md "Streaming fetch
	// (Server-Sent Events)"). The Lambda functions set it: API Gateway
	// buffers every answer whole. Everything net/http serves (`tierlog
	// serve`) streams.
	DisableStreaming bool
	// Auth is AuthNone (the default) or AuthTokens. Tokens live in the
	// metadata store (the local journal, the DynamoDB table).
	Auth string
	// AuthOptions configure the token verifier (tests: its clock).
	AuthOptions []auth.Option
	// AuthTrusted, with AuthTokens, admits the requests it reports true
	// for without a token: those API Gateway authorized with IAM.
	AuthTrusted func(*http.Request) bool
	// HotFSLatency, for benchmarks and tests, charges every hot-tier
	// file-system call the latency of its network round trip under the
	// profile (segment.LatencyFS; segment.ParseLatencyProfile names them),
	// so that a local disk behaves, in time, like EFS. The zero value,
	// "none", charges nothing.
	HotFSLatency segment.LatencyProfile
	// StreamKeepAlive is the longest silence of a stream before a
	// comment line; 0 (or more than 15s) means api.DefaultKeepAlive.
	StreamKeepAlive time.Duration
	// StreamStall is how long a stream waits for a client that reads
	// nothing before it cuts it; 0 means api.DefaultStreamStall.
	StreamStall time.Duration
	Logger      *slog.Logger
	// ReadOnly serves reads only and never writes the hot tier (the fetch
	// function).
	ReadOnly bool
	// OnRoll, if set, is called (besides waking the compactor timer) when
	// a partition seals a segment. It runs on the producing request's
	// goroutine and must not block: the produce function only records
	// the partition here and notifies the compactor before it answers.
	OnRoll func(meta.PartitionKey)
	// RunSubscriptions runs the subscriptions' deliverers in this process
	// from Start (tierlog serve). Without it the subscription routes are
	// served, but nothing here delivers.
	RunSubscriptions bool
	// Subscribe tunes the subscriptions (InvokeTimeout, retry backoff,
	// rescan); the server fills in Store, Source, Owner, Logger and, when
	// nil, Targets (webhooks, and Lambda functions through the SDK's
	// default configuration).
	Subscribe subscribe.Config
	// Console serves the web console at /ui/ and keeps its history in
	// memory (pkg/console, docs/console.md); `tierlog serve` turns it on.
	// ConsoleOptions configure it (tests: a clock, no ticker).
	Console        bool
	ConsoleOptions []console.Option
}

// Server is an assembled tierlog.
type Server struct {
	cfg       Config
	detached  sync.WaitGroup // Config.Detach's goroutines, by default
	Broker    *broker.Broker
	Meta      meta.Store
	Objects   objstore.Store
	Compactor *compactor.Compactor
	Metrics   *metrics.Set
	Requests  *metrics.HTTP // the API's requests by route pattern, method and code
	Counters  *objstore.Counters
	// HotFS counts the hot tier's file-system calls (broker and compactor
	// both go through it): tierlog_hot_fs_ops_total.
	HotFS *segment.FSCounters
	// HotFSRoundTrips counts the round trips Config.HotFSLatency charged,
	// by class (tierlog_hot_fs_round_trips_total); nil when it charges
	// nothing.
	HotFSRoundTrips *segment.RoundTripCounters
	Cache           *tier.Cache
	// MetaCounters reports the metadata adapter's request counts, if it
	// keeps them.
	MetaCounters func() map[string]int64
	// Streams counts the streaming fetches being served (nil with
	// Config.DisableStreaming).
	Streams *api.StreamStats
	// Subscriptions creates, describes and (with
	// Config.RunSubscriptions) runs subscriptions; nil when the metadata
	// store keeps none.
	Subscriptions *subscribe.Service
	// Tokens verifies and manages access tokens (nil if the metadata
	// store keeps none).
	Tokens *auth.Verifier
	// Console is the web console at /ui/ (nil unless Config.Console).
	Console *console.Console

	handler http.Handler
	kick    chan struct{} // a segment rolled: compact soon
	// streamsDone is closed when HTTPServer's server shuts down (or on
	// Close): it ends every stream, which would otherwise keep Shutdown
	// waiting for connections that never go idle.
	streamsDone chan struct{}
	endStreams  sync.Once

	closers []func() error
	stop    context.CancelFunc
	wg      sync.WaitGroup

	subsStop context.CancelFunc // subscriptions.go
}

// DefaultDataDir is where the local backend keeps everything by default.
const DefaultDataDir = "./.tierlog"

// MetaDir is the local backend's metadata store, in data dir dataDir.
func MetaDir(dataDir string) string { return filepath.Join(dataDir, "meta") }

func (c *Config) applyDefaults() error {
	if c.Backend == "" {
		c.Backend = BackendLocal
	}
	if c.DataDir == "" {
		c.DataDir = DefaultDataDir
	}
	if c.CompactInterval == 0 {
		c.CompactInterval = 10 * time.Second
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = tier.DefaultCacheBytes
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = DefaultBodyReadTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Auth == "" {
		c.Auth = AuthNone
	}
	if c.Auth != AuthNone && c.Auth != AuthTokens {
		return fmt.Errorf("server: unknown auth %q (want %q or %q)", c.Auth, AuthNone, AuthTokens)
	}
	switch c.Backend {
	case BackendLocal:
		if c.Owner == "" {
			c.Owner = "local"
		}
		if c.ReleaseEachBatch == nil {
			f := false
			c.ReleaseEachBatch = &f
		}
	case BackendAWS:
		if c.HotDir == "" || c.Table == "" || c.Bucket == "" {
			return errors.New("server: the aws backend needs a hot dir, a table and a bucket")
		}
		if c.Owner == "" {
			c.Owner = UniqueOwner()
		}
		if c.ReleaseEachBatch == nil {
			t := true
			c.ReleaseEachBatch = &t
		}
	default:
		return fmt.Errorf("server: unknown backend %q (want %q or %q)", c.Backend, BackendLocal, BackendAWS)
	}
	return nil
}

// UniqueOwner is a lease owner id unique to this process.
func UniqueOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// Open builds a Server. Call Start to run the compactor timer and Close
// when done.
func Open(ctx context.Context, cfg Config) (*Server, error) {
	if err := cfg.applyDefaults(); err != nil {
		return nil, err
	}
	s := &Server{cfg: cfg, Metrics: metrics.New(), Requests: metrics.NewHTTP(), Counters: &objstore.Counters{}, kick: make(chan struct{}, 1)}
	var hotDir string
	var objects objstore.Store
	switch cfg.Backend {
	case BackendLocal:
		// The store logs what it repaired or lost at ERROR when it opens.
		store, err := local.Open(MetaDir(cfg.DataDir), local.WithLogger(cfg.Logger))
		if errors.Is(err, local.ErrCorrupt) {
			return nil, fmt.Errorf("open metadata: %w\nthe metadata journal is damaged: 'tierlog repair --data-dir %s --dry-run' reports what a repair would drop, and --yes repairs it (docs/operations.md)", err, cfg.DataDir)
		}
		if err != nil {
			return nil, fmt.Errorf("open metadata: %w", err)
		}
		s.Meta = store
		s.closers = append(s.closers, store.Close)
		objs, err := objlocal.New(filepath.Join(cfg.DataDir, "cold"))
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open object store: %w", err)
		}
		objects = objs
		hotDir = filepath.Join(cfg.DataDir, "topics")
	case BackendAWS:
		m, o, counters, err := openAWS(ctx, cfg)
		if err != nil {
			return nil, err
		}
		s.Meta, objects, s.MetaCounters = m, o, counters
		s.closers = append(s.closers, m.Close)
		hotDir = cfg.HotDir
	}
	s.Objects = objstore.Counting(objects, s.Counters)
	s.HotFS = &segment.FSCounters{}
	var hotFS segment.FS = segment.OSFS{}
	if cfg.HotFSLatency.Charges() {
		s.HotFSRoundTrips = &segment.RoundTripCounters{}
		hotFS = segment.LatencyFS(hotFS, cfg.HotFSLatency, s.HotFSRoundTrips, nil)
		cfg.Logger.Info("hot tier charged network latency", "profile", cfg.HotFSLatency.String(),
			"read", cfg.HotFSLatency.Read, "durable", cfg.HotFSLatency.Durable)
	}
	// Counted outside the latency wrapper: one count per call the broker
	// or the compactor makes.
	hotFS = segment.CountingFS(hotFS, s.HotFS)
	s.Cache = tier.NewCache(cfg.CacheBytes)

	comp, err := compactor.New(compactor.Config{
		Meta: s.Meta, Objects: s.Objects, HotDir: hotDir, FS: hotFS, Grace: cfg.CompactGrace,
		Logger: cfg.Logger, Metrics: s.Metrics,
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Compactor = comp
	b, err := broker.New(ctx, broker.Config{
		DataDir:          hotDir,
		FS:               hotFS,
		Meta:             s.Meta,
		Owner:            cfg.Owner,
		LeaseTTL:         cfg.LeaseTTL,
		BusyWait:         cfg.BusyWait,
		Checkpoint:       cfg.Backend == BackendAWS,
		ReadOnly:         cfg.ReadOnly,
		ReleaseEachBatch: *cfg.ReleaseEachBatch,
		Detach:           s.detachFunc(),
		Objects:          s.Objects,
		Cache:            s.Cache,
		AnswerCacheBytes: cfg.AnswerCacheBytes,
		Logger:           cfg.Logger,
		Metrics:          s.Metrics,
		OnRoll: func(k meta.PartitionKey) {
			s.Kick()
			if cfg.OnRoll != nil {
				cfg.OnRoll(k)
			}
		},
		OnDeleteTopic: func(ctx context.Context, t meta.TopicConfig) {
			if err := comp.PurgeTopic(ctx, t); err != nil {
				cfg.Logger.Warn("purge deleted topic's cold tier", "topic", t.Name, "err", err)
			}
		},
	})
	if err != nil {
		s.Close()
		return nil, err
	}
	s.Broker = b
	if cfg.Backend == BackendLocal && !cfg.ReadOnly {
		// One process owns the data dir: compare it with the metadata
		// once, loudly. (The aws backend's hot dir is shared and large;
		// its processes start often and do not scan it.)
		if err := s.checkHot(ctx); err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.openSubscriptions(); err != nil {
		s.Close()
		return nil, err
	}
	// One handler for everything, /metrics included: a ServeMux in front
	// of the API would clean "..", "." and "//" out of paths and answer
	// 307 redirects that keep the method (a DELETE of
	// /v1/topics/x/partitions/.. would become a DELETE of the topic).
	opts := []api.Option{api.WithLogger(cfg.Logger),
		api.WithBodyReadTimeout(max(cfg.BodyReadTimeout, 0)),
		api.WithRequestMetrics(s.Requests),
		api.WithRoute(http.MethodGet, "/metrics", s.metricsHandler())}
	s.streamsDone = make(chan struct{})
	if !cfg.DisableStreaming {
		s.Streams = &api.StreamStats{}
		opts = append(opts, api.WithStreaming(api.StreamConfig{
			KeepAlive: cfg.StreamKeepAlive, Stall: cfg.StreamStall, Done: s.streamsDone, Stats: s.Streams}))
	}
	if s.Subscriptions != nil {
		opts = append(opts, api.WithSubscriptions(s.Subscriptions))
	}
	if ts, ok := s.Meta.(meta.TokenStore); ok {
		s.Tokens = auth.New(ts, cfg.AuthOptions...)
		if cfg.Auth == AuthTokens {
			opts = append(opts, api.WithAuth(s.Tokens), api.WithTrusted(cfg.AuthTrusted))
		} else {
			opts = append(opts, api.WithTokenRoutes(s.Tokens))
		}
	} else if cfg.Auth == AuthTokens {
		s.Close()
		return nil, fmt.Errorf("server: auth %q: the metadata store keeps no tokens", cfg.Auth)
	}
	if cfg.Console {
		src := &console.Sources{Broker: b, Meta: s.Meta, Metrics: s.Metrics, Requests: s.Requests}
		if s.Streams != nil {
			src.Streamed = s.Streams.Events
		}
		s.Console = console.New(src, append([]console.Option{console.WithLogger(cfg.Logger)}, cfg.ConsoleOptions...)...)
		// The pages are open; the data they show (console.DataPrefix)
		// needs what /metrics needs with token auth on.
		opts = append(opts, api.WithOpenRoute(http.MethodGet, console.Prefix, s.Console, func(r *http.Request) bool {
			return !strings.HasPrefix(r.URL.Path, console.DataPrefix)
		}))
	}
	s.handler = api.New(b, opts...)
	return s, nil
}

// checkHot logs what Broker.CheckHot finds: directories no topic names and
// partitions whose metadata lost history (which then refuse writes).
func (s *Server) checkHot(ctx context.Context) error {
	ls, _ := s.Meta.(*local.Store)
	lost := ls != nil && ls.Recovery().LostCommitted
	rep, err := s.Broker.CheckHot(ctx, lost)
	if err != nil {
		return fmt.Errorf("check data dir: %w", err)
	}
	for _, d := range rep.Unknown {
		s.cfg.Logger.Error("data dir holds a topic the metadata does not know: its records are unreachable; lost metadata, or an interrupted delete",
			"dir", d)
	}
	for _, p := range rep.Behind {
		s.cfg.Logger.Error("partition metadata is behind its files (lost metadata): writes to it are refused",
			"topic", p.Key.Topic, "partition", p.Key.Partition, "epoch", p.Epoch, "next_offset", p.NextOffset, "segment", p.Segment)
	}
	if lost {
		s.cfg.Logger.Error("metadata journal lost committed data: committed offsets may have gone back; check the partitions listed above")
	}
	return nil
}

// Handler serves the API and GET /metrics.
func (s *Server) Handler() http.Handler { return s.handler }

// HTTPServer is the http.Server `tierlog serve` runs: Handler, with
// bounds on slow headers and idle connections. Bodies are bounded per
// request by Config.BodyReadTimeout (in the handler, so a long poll or a
// produce waiting its turn is not cut by a connection-wide ReadTimeout).
// The caller sets nothing else but may change any field before serving.
//
// It has no WriteTimeout: a stream (streaming fetch) extends the write
// deadline per write if one is set. Its Shutdown ends every stream at
// once (each gets an "unavailable" error event), so only ordinary
// requests and long polls are waited for.
func (s *Server) HTTPServer() *http.Server {
	hs := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(s.cfg.Logger.Handler(), slog.LevelWarn),
	}
	hs.RegisterOnShutdown(s.EndStreams)
	return hs
}

// EndStreams ends every streaming fetch being served, and every one
// started after. HTTPServer's Shutdown and Close call it.
func (s *Server) EndStreams() {
	if s.streamsDone != nil {
		s.endStreams.Do(func() { close(s.streamsDone) })
	}
}

// Kick asks the compactor loop for a pass soon (a segment rolled).
func (s *Server) Kick() {
	select {
	case s.kick <- struct{}{}:
	default:
	}
}

// Start runs the compactor on its timer (and on every roll) until Close,
// and the subscriptions' deliverers with Config.RunSubscriptions.
func (s *Server) Start() {
	s.startSubscriptions()
	if s.cfg.CompactInterval < 0 {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stop = cancel
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		t := time.NewTicker(s.cfg.CompactInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			case <-s.kick:
			}
			st, err := s.Compactor.Run(ctx)
			if err != nil && ctx.Err() == nil {
				s.cfg.Logger.Warn("compactor pass", "err", err)
			}
			if st.Finalized > 0 || st.LogStartAdvanced > 0 || st.HotFilesDeleted > 0 {
				s.cfg.Logger.Info("compactor pass", "finalized", st.Finalized, "bytes", st.BytesUploaded,
					"log_start_advanced", st.LogStartAdvanced, "hot_deleted", st.HotFilesDeleted, "objects_deleted", st.ObjectsDeleted)
			}
		}
	}()
}

// detachFunc is the broker's Detach (Config.Detach).
func (s *Server) detachFunc() func(func()) {
	switch {
	case s.cfg.Detach != nil:
		return s.cfg.Detach
	case *s.cfg.ReleaseEachBatch:
		return s.detached.Go
	}
	return nil
}

// Close stops the compactor, closes the broker (releasing leases, syncing
// files) and the stores.
func (s *Server) Close() error {
	s.EndStreams()
	s.closeSubscriptions()
	if s.Console != nil {
		s.Console.Close()
	}
	if s.stop != nil {
		s.stop()
		s.wg.Wait()
	}
	s.detached.Wait() // the produces' work after their answers
	var errs []error
	if s.Broker != nil {
		errs = append(errs, s.Broker.Close())
	}
	for i := len(s.closers) - 1; i >= 0; i-- {
		errs = append(errs, s.closers[i]())
	}
	return errors.Join(errs...)
}
