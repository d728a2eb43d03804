// Package emulator serves S3 and DynamoDB on one LocalStack-style HTTP
// endpoint from two in-process wire-protocol emulators, so a single
// AWS_ENDPOINT_URL points every AWS SDK client of tierlog at both:
//
//	request                                        served by
//	---------------------------------------------  ---------------------------------------
//	GET|HEAD /_localstack/health                   this package: {"services":{"s3":"running",
//	                                               "dynamodb":"running"},...}
//	any request with X-Amz-Target: DynamoDB_20120810.<Op>
//	                                               minidyn (github.com/truora/minidyn/server),
//	                                               tables in memory, through the fixes below
//	any other X-Amz-Target                         400 UnknownOperationException (JSON)
//	everything else                                gofakes3 (github.com/johannesboyne/gofakes3),
//	                                               path-style S3 only: /<bucket>/<key>
//
// S3 objects live in memory, or with Options.DataDir in one bbolt file,
// DataDir/s3.bolt (gofakes3's s3bolt backend), so they survive a restart.
// DynamoDB tables are always in memory and are lost when the process ends.
//
// # What this package adds to the emulators
//
// Behind a shared endpoint, with several clients, both emulators need
// fixes; dynamo.go and bolt.go apply them:
//
//   - X-Amz-Crc32 (minidyn). The DynamoDB SDK checks every response body
//     against that header, and against 0 when it is absent. With this
//     module's SDK the call still succeeds, but each one logs "WARN failed
//     to close HTTP response body ... response did not match expected
//     checksum, 0, N", and config.LoadDefaultConfig logs to stderr: `tierlog
//     serve --backend aws` against bare minidyn prints a line per request
//     (see localstack/README.md, "B. Without Docker: `localstack/lite`"). The
//     emulator buffers each response and sets the header, so unmodified
//     production clients run quietly.
//   - Locking (minidyn). Its CreateTable, UpdateTable, DeleteTable and
//     DescribeTable use its table map without its lock, a data race with
//     every item operation; the emulator runs them exclusively (a
//     sync.RWMutex: table operations write-locked, the rest read-locked;
//     minidyn serialises item operations itself).
//   - ListTables (minidyn lacks it; its plain-text answer fails the SDK's
//     decoder): answered here from the tables created and deleted through
//     the emulator, in name order, with Limit and ExclusiveStartTableName.
//   - Unsupported operations: minidyn answers a plain-text 400; the
//     emulator answers a DynamoDB JSON UnknownOperationException.
//   - TableStatus: a CreateTable or DescribeTable answer without one gets
//     "ACTIVE", so the SDK's TableExists waiter and `aws dynamodb wait
//     table-exists` finish.
//   - Aliased bytes (gofakes3's s3bolt backend, DataDir only). It returns
//     object bytes that point into bbolt's memory map after the read
//     transaction has ended; a concurrent PUT then tears the object a GET
//     is streaming, or remaps the file and the server dies with
//     "unexpected fault address". bolt.go serialises writes against reads
//     and copies what reads return.
//
// # Emulator limits
//
// gofakes3: path-style addressing only (SDK clients need UsePathStyle); the
// S3 client should use checksums "when required" for ranged GETs
// (localstack/README.md, "B. Without Docker"); CompleteMultipartUpload
// ignores If-None-Match (see package objstore/s3). minidyn: no streams, no
// TTL, no PITR; what it supports is listed in its docs/operations.md.
//
// An Emulator is safe for concurrent use. Close it to release the data
// directory.
package emulator

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	bolt "go.etcd.io/bbolt"
)

// Paths and headers that route a request.
const (
	// HealthPath answers like LocalStack's health endpoint.
	HealthPath = "/_localstack/health"
	// DynamoDBTargetPrefix starts the X-Amz-Target header of every
	// DynamoDB JSON 1.0 request.
	DynamoDBTargetPrefix = "DynamoDB_20120810."
	// BoltFile is the name of the S3 object file under Options.DataDir.
	BoltFile = "s3.bolt"
)

// Options configures New. The zero value serves both services from memory
// and logs nothing.
type Options struct {
	// DataDir, when set, keeps S3 buckets and objects in DataDir/s3.bolt
	// (the directory is created). Only one process may use a DataDir at a
	// time: New fails after LockTimeout if another holds it. DynamoDB
	// tables are in memory whatever DataDir says.
	DataDir string
	// LockTimeout bounds the wait for DataDir's file lock (default 2 s).
	LockTimeout time.Duration
	// Logger receives emulator errors (gofakes3 internal errors, response
	// write failures). nil discards them.
	Logger *slog.Logger
}

// Emulator is the http.Handler of the combined endpoint. It is safe for
// concurrent use.
type Emulator struct {
	s3     http.Handler
	ddb    *dynamo
	db     *bolt.DB // nil when S3 is in memory
	logger *slog.Logger
	health []byte
}

var _ http.Handler = (*Emulator)(nil)
var _ io.Closer = (*Emulator)(nil)

// New returns an Emulator with opts applied: S3 in memory or in
// opts.DataDir, DynamoDB in memory.
func New(opts Options) (*Emulator, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = 2 * time.Second
	}
	e := &Emulator{logger: opts.Logger, ddb: newDynamo(opts.Logger)}

	var backend gofakes3.Backend
	if opts.DataDir == "" {
		backend = s3mem.New()
	} else {
		if err := os.MkdirAll(opts.DataDir, 0o700); err != nil {
			return nil, fmt.Errorf("emulator: data dir: %w", err)
		}
		path := filepath.Join(opts.DataDir, BoltFile)
		db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
		if err != nil {
			if errors.Is(err, bolt.ErrTimeout) {
				return nil, fmt.Errorf("emulator: %s is in use by another process (waited %v)", path, opts.LockTimeout)
			}
			return nil, fmt.Errorf("emulator: open %s: %w", path, err)
		}
		e.db = db
		backend = &boltBackend{inner: s3bolt.New(db)}
	}
	e.s3 = gofakes3.New(backend, gofakes3.WithLogger(gofakesLogger{opts.Logger})).Server()

	health, err := json.Marshal(map[string]any{
		"services": map[string]string{"s3": "running", "dynamodb": "running"},
		"edition":  "tierlog-lite",
		"version":  "1",
	})
	if err != nil {
		return nil, err
	}
	e.health = health
	return e, nil
}

// ServeHTTP routes r: health, DynamoDB by X-Amz-Target, S3 otherwise.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == HealthPath {
		e.serveHealth(w, r)
		return
	}
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		if op, ok := strings.CutPrefix(target, DynamoDBTargetPrefix); ok {
			e.ddb.serve(w, r, op)
			return
		}
		// S3's REST API never sends X-Amz-Target: this is another JSON
		// service (SSM, Logs, ...) the lite endpoint does not emulate.
		writeDynamoError(w, http.StatusBadRequest, "UnknownOperationException",
			fmt.Sprintf("tierlog lite serves only S3 and DynamoDB, not %q", target), e.logger)
		return
	}
	e.s3.ServeHTTP(w, r)
}

func (e *Emulator) serveHealth(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	if r.Method == http.MethodGet {
		_, _ = w.Write(e.health)
	}
}

// Close releases the data directory, if any. The Emulator must not serve
// requests after Close.
func (e *Emulator) Close() error {
	if e.db == nil {
		return nil
	}
	err := e.db.Close()
	e.db = nil
	if err != nil {
		return fmt.Errorf("emulator: close %s: %w", BoltFile, err)
	}
	return nil
}

// gofakesLogger passes gofakes3's errors and warnings to slog; its info and
// debug lines (one per request) are dropped.
type gofakesLogger struct{ l *slog.Logger }

func (g gofakesLogger) Print(level gofakes3.LogLevel, v ...any) {
	switch level {
	case gofakes3.LogErr:
		g.l.Error("s3: " + fmt.Sprint(v...))
	case gofakes3.LogWarn:
		g.l.Warn("s3: " + fmt.Sprint(v...))
	}
}
