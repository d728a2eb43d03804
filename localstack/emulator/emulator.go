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
// S3 objects live in memory, or in the gofakes3 backend Options.S3 names
// (the lite command's --data-dir keeps them in a bbolt file). DynamoDB
// tables are always in memory and are lost when the process ends.
//
// # What this package adds to the emulators
//
// Behind a shared endpoint, with several clients, minidyn needs fixes;
// dynamo.go applies them:
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
//
// # Emulator limits
//
// gofakes3: path-style addressing only (SDK clients need UsePathStyle); the
// S3 client should use checksums "when required" for ranged GETs
// (localstack/README.md, "B. Without Docker"); CompleteMultipartUpload
// ignores If-None-Match (see package objstore/s3). minidyn: no streams, no
// TTL, no PITR; what it supports is listed in its docs/operations.md.
//
// An Emulator is safe for concurrent use.
package emulator

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Paths and headers that route a request.
const (
	// HealthPath answers like LocalStack's health endpoint.
	HealthPath = "/_localstack/health"
	// DynamoDBTargetPrefix starts the X-Amz-Target header of every
	// DynamoDB JSON 1.0 request.
	DynamoDBTargetPrefix = "DynamoDB_20120810."
)

// Options configures New. The zero value serves both services from memory
// and logs nothing.
type Options struct {
	// S3 is the backend of S3 buckets and objects; nil keeps them in
	// memory. It must be safe for concurrent requests. The Emulator takes
	// it over: Close closes it if it is an io.Closer.
	S3 gofakes3.Backend
	// Logger receives emulator errors (gofakes3 internal errors, response
	// write failures). nil discards them.
	Logger *slog.Logger
}

// Emulator is the http.Handler of the combined endpoint. It is safe for
// concurrent use.
type Emulator struct {
	s3     http.Handler
	ddb    *dynamo
	s3back gofakes3.Backend
	logger *slog.Logger
	health []byte
}

var _ http.Handler = (*Emulator)(nil)
var _ io.Closer = (*Emulator)(nil)

// New returns an Emulator with opts applied: S3 in opts.S3 (else in
// memory), DynamoDB in memory.
func New(opts Options) (*Emulator, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	e := &Emulator{logger: opts.Logger, ddb: newDynamo(opts.Logger)}
	backend := opts.S3
	if backend == nil {
		backend = s3mem.New()
	}
	e.s3back = backend
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

// Close closes the S3 backend if it is an io.Closer (the lite command's
// bbolt file); an Emulator in memory holds nothing to release. The
// Emulator must not serve requests after Close.
func (e *Emulator) Close() error {
	if c, ok := e.s3back.(io.Closer); ok {
		return c.Close()
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
