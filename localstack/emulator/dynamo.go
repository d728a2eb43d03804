package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/truora/minidyn/server"
)

// maxDynamoBody bounds a DynamoDB request body. DynamoDB's own largest
// requests (BatchWriteItem, TransactWriteItems) are 16 MB.
const maxDynamoBody = 16 << 20

// dynamo fronts minidyn's HTTP handler with the fixes listed in the
// package doc. It is safe for concurrent use.
type dynamo struct {
	srv    http.Handler
	logger *slog.Logger
	reqID  atomic.Uint64

	// mu is held exclusively around table operations (minidyn's table map
	// is unguarded there) and shared around everything else.
	mu struct {
		sync.RWMutex
		tables map[string]struct{} // created and not deleted, for ListTables
	}
}

func newDynamo(logger *slog.Logger) *dynamo {
	d := &dynamo{srv: server.NewServer(), logger: logger}
	d.mu.tables = make(map[string]struct{})
	return d
}

// isTableOp reports whether op reads or writes minidyn's table map without
// minidyn's lock.
func isTableOp(op string) bool {
	switch op {
	case "CreateTable", "UpdateTable", "DeleteTable", "DescribeTable":
		return true
	}
	return false
}

// serve answers one DynamoDB request for operation op.
func (d *dynamo) serve(w http.ResponseWriter, r *http.Request, op string) {
	if r.Method != http.MethodPost {
		writeDynamoError(w, http.StatusMethodNotAllowed, "ValidationException",
			"DynamoDB requests are POST", d.logger)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxDynamoBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			writeDynamoError(w, http.StatusRequestEntityTooLarge, "ValidationException",
				"request body larger than 16 MB", d.logger)
			return
		}
		writeDynamoError(w, http.StatusBadRequest, "SerializationException",
			"reading request body: "+err.Error(), d.logger)
		return
	}
	if op == "ListTables" {
		d.listTables(w, body)
		return
	}

	rec := &recorder{header: make(http.Header), status: http.StatusOK}
	req := r.Clone(r.Context())
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))

	if isTableOp(op) {
		d.mu.Lock()
		d.srv.ServeHTTP(rec, req)
		if rec.status == http.StatusOK {
			d.track(op, body)
		}
		d.mu.Unlock()
	} else {
		d.mu.RLock()
		d.srv.ServeHTTP(rec, req)
		d.mu.RUnlock()
	}

	out := rec.body.Bytes()
	if rec.status != http.StatusOK && !strings.HasPrefix(rec.header.Get("Content-Type"), "application/x-amz-json") {
		// minidyn's plain-text answers: "unsupported operation" and the like.
		writeDynamoError(w, rec.status, "UnknownOperationException",
			op+": "+strings.TrimSpace(string(out)), d.logger)
		return
	}
	if rec.status == http.StatusOK {
		switch op {
		case "DescribeTable":
			out = withTableStatus(out, "Table")
		case "CreateTable":
			out = withTableStatus(out, "TableDescription")
		}
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	d.write(w, rec.status, out)
}

// track records a successful CreateTable or DeleteTable for ListTables.
// d.mu must be write-locked.
func (d *dynamo) track(op string, body []byte) {
	var in struct{ TableName string }
	if json.Unmarshal(body, &in) != nil || in.TableName == "" {
		return
	}
	switch op {
	case "CreateTable":
		d.mu.tables[in.TableName] = struct{}{}
	case "DeleteTable":
		delete(d.mu.tables, in.TableName)
	}
}

// listTables answers ListTables from the tracked names, in order, honouring
// Limit (1 to 100, default 100) and ExclusiveStartTableName.
func (d *dynamo) listTables(w http.ResponseWriter, body []byte) {
	var in struct {
		ExclusiveStartTableName string
		Limit                   int
	}
	if len(bytes.TrimSpace(body)) > 0 {
		if err := json.Unmarshal(body, &in); err != nil {
			writeDynamoError(w, http.StatusBadRequest, "SerializationException", err.Error(), d.logger)
			return
		}
	}
	if in.Limit < 0 || in.Limit > 100 {
		writeDynamoError(w, http.StatusBadRequest, "ValidationException",
			"Limit must be between 1 and 100", d.logger)
		return
	}
	if in.Limit == 0 {
		in.Limit = 100
	}
	d.mu.RLock()
	names := make([]string, 0, len(d.mu.tables))
	for n := range d.mu.tables {
		if n > in.ExclusiveStartTableName {
			names = append(names, n)
		}
	}
	d.mu.RUnlock()
	slices.Sort(names)

	out := struct {
		TableNames             []string `json:"TableNames"`
		LastEvaluatedTableName string   `json:"LastEvaluatedTableName,omitempty"`
	}{TableNames: names}
	if len(names) > in.Limit {
		out.TableNames = names[:in.Limit]
		out.LastEvaluatedTableName = names[in.Limit-1]
	}
	b, err := json.Marshal(out)
	if err != nil {
		writeDynamoError(w, http.StatusInternalServerError, "InternalServerError", err.Error(), d.logger)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	d.write(w, http.StatusOK, b)
}

// write sends body with the headers real DynamoDB sends about it.
func (d *dynamo) write(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amzn-Requestid", "lite-"+strconv.FormatUint(d.reqID.Add(1), 10))
	w.WriteHeader(status)
	if _, err := w.Write(body); err != nil {
		d.logger.Debug("dynamodb: writing response", "err", err)
	}
}

// writeDynamoError sends a DynamoDB JSON 1.0 error, checksummed.
func writeDynamoError(w http.ResponseWriter, status int, code, msg string, logger *slog.Logger) {
	b, _ := json.Marshal(struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}{"com.amazonaws.dynamodb.v20120810#" + code, msg})
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(b)), 10))
	h.Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	if _, err := w.Write(b); err != nil {
		logger.Debug("dynamodb: writing error response", "err", err)
	}
}

// withTableStatus returns body with TableStatus "ACTIVE" added to the table
// description under field when that description has none. minidyn's tables
// are usable as soon as they are created. body is returned unchanged when
// it is not the expected shape.
func withTableStatus(body []byte, field string) []byte {
	var top map[string]json.RawMessage
	if json.Unmarshal(body, &top) != nil {
		return body
	}
	var desc map[string]json.RawMessage
	if raw, ok := top[field]; !ok || json.Unmarshal(raw, &desc) != nil || desc == nil {
		return body
	}
	if s, ok := desc["TableStatus"]; ok && string(s) != `""` && string(s) != "null" {
		return body
	}
	desc["TableStatus"] = json.RawMessage(`"ACTIVE"`)
	raw, err := json.Marshal(desc)
	if err != nil {
		return body
	}
	top[field] = raw
	out, err := json.Marshal(top)
	if err != nil {
		return body
	}
	return out
}

// recorder buffers a handler's response so it can be checksummed.
type recorder struct {
	header      http.Header
	status      int
	wroteHeader bool
	body        bytes.Buffer
}

func (r *recorder) Header() http.Header { return r.header }

func (r *recorder) WriteHeader(status int) {
	if !r.wroteHeader {
		r.status, r.wroteHeader = status, true
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return r.body.Write(p)
}
