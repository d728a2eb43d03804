package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"reflect"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// maxBodyBytes is docs/api.md's body limit; more is 413 payload_too_large.
const maxBodyBytes = 5 << 20

// maxMetadataBytes bounds a group offset's metadata string, as Kafka's
// offset.metadata.max.bytes does (4 KiB). More is 413 payload_too_large.
const maxMetadataBytes = 4096

// limitBody is the request body, cut at maxBodyBytes. A body that
// announces more (Content-Length) is refused without reading a byte of
// it, so a client that sent "Expect: 100-continue" gets its 413 instead
// of "100 Continue".
func limitBody(w http.ResponseWriter, r *http.Request) io.Reader {
	if r.ContentLength > maxBodyBytes {
		return errReader{&http.MaxBytesError{Limit: maxBodyBytes}}
	}
	return http.MaxBytesReader(unwrapWriter(w), r.Body, maxBodyBytes)
}

// errReader fails every read with err.
type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// readJSON decodes the whole body into v: exactly one JSON value and
// nothing but white space after it. The body is strict (docs/api.md
// "Request bodies"): syntax is checked first, then strictFields holds it to v's
// type (no unknown field, no key given twice, no key in the wrong case:
// 400 naming the field with its path), and then the types are decoded.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	buf := bufPool.Get().(*bytes.Buffer)
	buf.Reset()
	defer func() {
		if buf.Cap() <= maxPooledBuffer {
			bufPool.Put(buf)
		}
	}()
	if _, err := buf.ReadFrom(limitBody(w, r)); err != nil {
		return bodyError(err)
	}
	if len(bytes.TrimSpace(buf.Bytes())) == 0 {
		return badRequest("request body is empty; want a JSON object")
	}
	return strictUnmarshal(buf.Bytes(), "", v)
}

// strictUnmarshal is json.Unmarshal of data into v with readJSON's rules;
// where is the path of data in its body ("offsets[3]"), "" for the body
// itself. Handlers that keep part of a body raw (json.RawMessage) decode
// it with strictUnmarshal (or decodeArray) to hold it to the same rules.
func strictUnmarshal(data []byte, where string, v any) error {
	if !json.Valid(data) {
		var probe any
		return jsonError(json.Unmarshal(data, &probe), where)
	}
	if err := strictFields(data, reflect.TypeOf(v), where); err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return jsonError(err, where)
	}
	return nil
}

// fieldSet is what strictFields knows of a struct type: its JSON names
// (exact) and, for the wrong-case hint, the names by lower case.
type fieldSet struct {
	exact map[string]reflect.Type
	fold  map[string]string
	names []string // in declaration order, for messages
}

// fieldSets caches fieldSet by struct type.
var fieldSets sync.Map // reflect.Type -> *fieldSet

var rawMessageType = reflect.TypeFor[json.RawMessage]()
var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// schemaOf resolves t to what its JSON must look like: a struct's
// fieldSet, or for any other type (nil, an interface, a map, a
// json.RawMessage, a type with its own UnmarshalJSON) nil, with elem the
// type of its elements or members where it has them (slices, arrays,
// maps). A nil schema with a nil elem is untyped: only duplicate keys
// are checked in it.
func schemaOf(t reflect.Type) (fs *fieldSet, elem reflect.Type) {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil || t == rawMessageType || reflect.PointerTo(t).Implements(unmarshalerType) {
		return nil, nil
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array, reflect.Map:
		return nil, t.Elem()
	case reflect.Struct:
	default:
		return nil, nil
	}
	if c, ok := fieldSets.Load(t); ok {
		return c.(*fieldSet), nil
	}
	fs = &fieldSet{exact: map[string]reflect.Type{}, fold: map[string]string{}}
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name := f.Name
		if tag, ok := f.Tag.Lookup("json"); ok {
			n, _, _ := strings.Cut(tag, ",")
			if n == "-" && !strings.HasPrefix(tag, "-,") {
				continue
			}
			if n != "" {
				name = n
			}
		}
		if f.Anonymous && name == f.Name {
			// An embedded struct's fields are the outer struct's.
			if inner, _ := schemaOf(f.Type); inner != nil {
				for _, n := range inner.names {
					fs.exact[n] = inner.exact[n]
					fs.fold[strings.ToLower(n)] = n
					fs.names = append(fs.names, n)
				}
				continue
			}
		}
		fs.exact[name] = f.Type
		fs.fold[strings.ToLower(name)] = name
		fs.names = append(fs.names, name)
	}
	c, _ := fieldSets.LoadOrStore(t, fs)
	return c.(*fieldSet), nil
}

// strictFields checks data, valid JSON, against t: every object decoded
// into a struct has only that struct's fields, spelt exactly, each at
// most once; no object anywhere has a key twice.
func strictFields(data []byte, t reflect.Type, where string) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return strictValue(dec, t, where)
}

// joinPath is path.name, or name at the top.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

func strictValue(dec *json.Decoder, t reflect.Type, path string) error {
	tok, err := dec.Token()
	if err != nil {
		return jsonError(err, path)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil // a scalar: its type is the decoder's to check
	}
	fs, elem := schemaOf(t)
	if d == '[' {
		for i := 0; dec.More(); i++ {
			if err := strictValue(dec, elem, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		_, err := dec.Token()
		return err
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return jsonError(err, path)
		}
		name, _ := tok.(string)
		at := joinPath(path, name)
		if seen[name] {
			return badRequest("%s is given twice", at)
		}
		seen[name] = true
		ft := elem
		if fs != nil {
			var known bool
			if ft, known = fs.exact[name]; !known {
				return unknownField(fs, at, name)
			}
		}
		if err := strictValue(dec, ft, at); err != nil {
			return err
		}
	}
	_, err = dec.Token()
	return err
}

// unknownField is the 400 of a field name fs does not have at path at.
func unknownField(fs *fieldSet, at, name string) error {
	if n, ok := fs.fold[strings.ToLower(name)]; ok {
		return badRequest("unknown field %s: field names are case-sensitive; did you mean %s?", at, quote(n))
	}
	return badRequest("unknown field %s: want %s", at, fieldList(fs.names))
}

// fieldList is names for messages: "a", "a or b", "a, b or c".
func fieldList(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quote(n)
	}
	switch len(q) {
	case 0:
		return "no fields"
	case 1:
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// bodyError classifies an error reading the body. The reader's own text
// is not repeated: it may name addresses.
func bodyError(err error) error {
	var (
		mbe *http.MaxBytesError
		bte *bodyTimeoutError
	)
	switch {
	case errors.As(err, &mbe):
		return tooLarge("request body is larger than %d bytes", mbe.Limit)
	case errors.As(err, &bte):
		return &apiError{status: http.StatusRequestTimeout, code: codeRequestTimeout,
			msg: fmt.Sprintf("request body not received within %v; nothing was done", bte.limit)}
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("cannot read request body: it ends before its Content-Length")
	}
	return badRequest("cannot read request body")
}

// isBodyError reports whether err came from reading the body rather than
// from decoding it.
func isBodyError(err error) bool {
	var (
		mbe *http.MaxBytesError
		bte *bodyTimeoutError
	)
	return errors.As(err, &mbe) || errors.As(err, &bte)
}

// jsonError turns a decoding error into a 400 that says where and what.
// where prefixes the location ("records[3]").
func jsonError(err error, where string) error {
	var (
		se  *json.SyntaxError
		ute *json.UnmarshalTypeError
	)
	at := ""
	if where != "" {
		at = " in " + where
	}
	switch {
	case isBodyError(err), foreign(err):
		// Reading failed (a timeout, a reset): say so without the
		// socket's text.
		return bodyError(err)
	case errors.As(err, &se):
		return badRequest("malformed JSON%s at byte %d: %v", at, se.Offset, se)
	case errors.As(err, &ute):
		field := ute.Field
		switch {
		case where != "" && field != "":
			field = where + "." + field
		case where != "":
			field = where
		case field == "":
			field = "request body"
		}
		return badRequest("%s: got JSON %s, want %s", field, ute.Value, jsonKind(ute.Type))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return badRequest("truncated JSON%s: the body ends inside a value", at)
	}
	return badRequest("invalid JSON%s: %v", at, err)
}

func jsonKind(t reflect.Type) string {
	if t == nil {
		return "another type"
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("an integer in [%d, %d]", minOf(t), maxOf(t))
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	}
	return t.Kind().String()
}

func minOf(t reflect.Type) int64 {
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return 0
	}
	return -1 << (t.Bits() - 1)
}

func maxOf(t reflect.Type) uint64 {
	if t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64 {
		return 1<<t.Bits() - 1
	}
	return 1<<(t.Bits()-1) - 1
}

// isNull reports whether raw is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return raw == nil || string(raw) == "null"
}

// jsonType names the JSON type of a valid raw value, for messages.
func jsonType(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "string"
	case '{':
		return "object"
	case '[':
		return "array"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// rawInt parses a raw JSON value that must be a non-negative integer up to
// max (no fraction, no exponent).
func rawInt(raw json.RawMessage, what string, max int64) (int64, error) {
	if raw[0] == '"' || raw[0] == '{' || raw[0] == '[' || raw[0] == 't' || raw[0] == 'f' {
		return 0, badRequest("%s: got JSON %s, want a non-negative integer", what, jsonType(raw))
	}
	n, ok := parseNonNegative(string(raw), max)
	if !ok {
		return 0, badRequest("%s: %s is not a non-negative integer up to %d", what, quote(string(raw)), max)
	}
	return n, nil
}

// rawString decodes a raw JSON string without altering its bytes: input
// that is not valid UTF-8, or escapes (lone surrogates) that encoding/json
// would replace with U+FFFD, are refused instead of silently changed. The
// result may share raw's memory and is never nil.
func rawString(raw json.RawMessage, what string) ([]byte, error) {
	if raw[0] != '"' {
		return nil, badRequest("%s: got JSON %s, want a string or null", what, jsonType(raw))
	}
	if !utf8.Valid(raw) {
		return nil, badRequest("%s is not valid UTF-8; send such bytes with \"encoding\":\"base64\"", what)
	}
	body := raw[1 : len(raw)-1 : len(raw)-1] // capped: appends never reach raw
	if bytes.IndexByte(body, '\\') < 0 {
		// Fast path: no escapes. The decoder already checked the syntax
		// (no control characters), so the bytes are the string.
		return body, nil
	}
	if loneSurrogate(body) {
		return nil, badRequest("%s has an unpaired UTF-16 surrogate escape; send such bytes with \"encoding\":\"base64\"", what)
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, jsonError(err, what)
	}
	return []byte(s), nil
}

// loneSurrogate reports whether the body of a syntactically valid JSON
// string has a \uD800-\uDFFF escape that is not part of a high-low pair.
func loneSurrogate(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++ // the escaped character
		if b[i] != 'u' {
			continue
		}
		c := hex4(b[i+1 : i+5])
		i += 4
		switch {
		case c >= 0xDC00 && c <= 0xDFFF:
			return true // low half first
		case c >= 0xD800 && c <= 0xDBFF:
			if i+6 >= len(b) || b[i+1] != '\\' || b[i+2] != 'u' {
				return true
			}
			if lo := hex4(b[i+3 : i+7]); lo < 0xDC00 || lo > 0xDFFF {
				return true
			}
			i += 6
		}
	}
	return false
}

// hex4 decodes four hex digits the JSON scanner already validated.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		default:
			r |= rune(c - 'A' + 10)
		}
	}
	return r
}

// rawBytes decodes a key or value in enc. The result is never nil: nil
// (no key, tombstone) is decided by the caller from JSON null.
func rawBytes(raw json.RawMessage, enc jsonrec.Encoding, what string) ([]byte, error) {
	s, err := rawString(raw, what)
	if err != nil || enc == jsonrec.UTF8 {
		return s, err
	}
	b, err := jsonrec.DecodeBase64(s)
	if err != nil {
		return nil, badRequest("%s is not valid standard base64 (RFC 4648, padded, no line breaks): %v", what, err)
	}
	return b, nil
}

// rawRecord is one record of a produce body before its encoding is known
// (the "encoding" field may come after "records").
type rawRecord struct {
	Key       json.RawMessage
	Value     json.RawMessage
	Partition json.RawMessage
	Headers   json.RawMessage
	Timestamp json.RawMessage
}

// The fields of a produce body, of a record and of a header, for strict
// decoding (docs/api.md "Request bodies").
var (
	produceFields = newFieldSet("encoding", "records", "expected_offset")
	recordFields  = newFieldSet("key", "value", "partition", "headers", "timestamp")
	headerFields  = newFieldSet("key", "value")
)

// newFieldSet is the fieldSet of a hand-decoded object with these names.
func newFieldSet(names ...string) *fieldSet {
	fs := &fieldSet{exact: map[string]reflect.Type{}, fold: map[string]string{}, names: names}
	for _, n := range names {
		fs.exact[n] = nil
		fs.fold[strings.ToLower(n)] = n
	}
	return fs
}

// readProduce decodes a produce body:
//
//	{"encoding":"utf8"|"base64"|"json","records":[{"key":..,"value":..,"partition":..,
//	 "headers":[{"key":..,"value":..}],"timestamp":ms}],"expected_offset":N}
//
// strictly: no unknown field, none twice, none in the wrong case.
// It streams through the records array so that a body of tiny records is
// refused at record 10,001 instead of after decoding all of them. With
// allowPartition false (the partition route) a per-record partition is
// refused.
func readProduce(w http.ResponseWriter, r *http.Request, allowPartition bool) ([]broker.ProduceRecord, error) {
	recs, _, _, err := readProduceJSON(w, r, allowPartition)
	return recs, err
}

// readProduceJSON is readProduce that also returns the body's
// "expected_offset" (nil when absent or null): a non-negative integer
// that fits an int64, else 400. Which route may carry it is the
// handler's decision.
//
// The whole body is read first and scanned by jsonrec.ScanProduce, which takes
// the plain shape only; anything else (every error included) is
// answered by decodeProduce, the encoding/json decoder, reading the same
// bytes and then the same read error as the body gave: its answers are
// the route's, byte for byte.
//
// The body comes from a pool and the scanned records alias it: release
// gives it back once they have been appended (the broker copies them).
func readProduceJSON(w http.ResponseWriter, r *http.Request, allowPartition bool) (_ []broker.ProduceRecord, expected *int64, release func(), _ error) {
	body, release, err := readPooledJSONBody(w, r)
	if err == nil {
		if recs, expected, ok := jsonrec.ScanProduce(body, allowPartition); ok {
			return recs, expected, release, nil
		}
	}
	var src io.Reader = bytes.NewReader(body)
	if err != nil {
		src = io.MultiReader(src, errReader{err})
	}
	recs, expected, err := decodeProduceJSON(src, allowPartition)
	return recs, expected, release, err
}

// decodeProduceJSON is readProduceJSON by encoding/json alone, reading
// the body from src.
func decodeProduceJSON(src io.Reader, allowPartition bool) ([]broker.ProduceRecord, *int64, error) {
	var expectedRaw json.RawMessage
	recs, err := decodeProduce(src, allowPartition, &expectedRaw)
	if err != nil {
		return nil, nil, err
	}
	if isNull(expectedRaw) {
		return recs, nil, nil
	}
	n, err := rawInt(expectedRaw, "expected_offset", math.MaxInt64)
	if err != nil {
		return nil, nil, err
	}
	return recs, &n, nil
}

// decodeProduce is readProduce of the body src, storing the raw
// "expected_offset" (if any) in *expectedRaw.
func decodeProduce(src io.Reader, allowPartition bool, expectedRaw *json.RawMessage) ([]broker.ProduceRecord, error) {
	dec := json.NewDecoder(src)
	tok, err := dec.Token()
	if errors.Is(err, io.EOF) {
		return nil, badRequest("request body is empty; want a JSON object")
	}
	if err != nil {
		return nil, jsonError(err, "")
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, badRequest("request body: got JSON %s, want an object with \"records\"", tokenType(tok))
	}
	var (
		raws     []rawRecord
		haveRecs bool
		// expected_offset is checked once the body is known to be
		// well-formed JSON, like encoding.
		haveExpected, haveEnc bool
		enc                   = jsonrec.UTF8
		encErr                error // an unknown encoding, reported after the syntax
	)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err, "")
		}
		name, _ := tok.(string) // object keys are always strings
		switch name {
		case "encoding":
			if haveEnc {
				return nil, badRequest("encoding is given twice")
			}
			haveEnc = true
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return nil, jsonError(err, "encoding")
			}
			if isNull(raw) {
				continue
			}
			s, err := rawString(raw, "encoding")
			if err != nil {
				return nil, err
			}
			enc, encErr = parseEncoding(string(s))
		case "expected_offset":
			if haveExpected {
				return nil, badRequest("expected_offset is given twice")
			}
			haveExpected = true
			if err := dec.Decode(expectedRaw); err != nil {
				return nil, jsonError(err, "expected_offset")
			}
		case "records":
			if haveRecs {
				return nil, badRequest("records is given twice")
			}
			haveRecs = true
			if raws, err = readRecords(dec); err != nil {
				return nil, err
			}
		default:
			return nil, unknownField(produceFields, name, name)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return nil, jsonError(err, "")
	}
	if tok, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return nil, jsonError(err, "")
		}
		return nil, badRequest("malformed JSON: unexpected %s after the top-level object", tokenType(tok))
	}
	if encErr != nil {
		return nil, encErr
	}
	if raws == nil {
		return nil, badRequest("records is required: an array of 1 to %d records", broker.MaxBatchRecords)
	}
	if len(raws) == 0 {
		return nil, badRequest("records is empty: send 1 to %d records", broker.MaxBatchRecords)
	}
	recs := make([]broker.ProduceRecord, len(raws))
	for i, rr := range raws {
		rec, err := convertRecord(i, rr, enc, allowPartition)
		if err != nil {
			return nil, err
		}
		recs[i] = rec
	}
	return recs, nil
}

// readRecords reads the value of "records": an array of objects, or null
// (nil result, "records is required").
func readRecords(dec *json.Decoder) ([]rawRecord, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonError(err, "records")
	}
	if tok == nil {
		return nil, nil
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, badRequest("records: got JSON %s, want an array", tokenType(tok))
	}
	raws := []rawRecord{}
	for dec.More() {
		if len(raws) == broker.MaxBatchRecords {
			return nil, tooLarge("more than %d records in one request", broker.MaxBatchRecords)
		}
		rr, err := readRecord(dec, len(raws))
		if err != nil {
			return nil, err
		}
		raws = append(raws, rr)
	}
	if _, err := dec.Token(); err != nil { // the closing ']'
		return nil, jsonError(err, "records")
	}
	return raws, nil
}

// readRecord reads records[i], an object of recordFields, each at most
// once, their values kept raw.
func readRecord(dec *json.Decoder, i int) (rawRecord, error) {
	var rr rawRecord
	at := fmt.Sprintf("records[%d]", i)
	tok, err := dec.Token()
	if err != nil {
		return rr, jsonError(err, at)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return rr, badRequest("%s: got JSON %s, want an object", at, tokenType(tok))
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return rr, jsonError(err, at)
		}
		name, _ := tok.(string)
		field := at + "." + name
		var slot *json.RawMessage
		switch name {
		case "key":
			slot = &rr.Key
		case "value":
			slot = &rr.Value
		case "partition":
			slot = &rr.Partition
		case "headers":
			slot = &rr.Headers
		case "timestamp":
			slot = &rr.Timestamp
		default:
			return rr, unknownField(recordFields, field, name)
		}
		if *slot != nil {
			return rr, badRequest("%s is given twice", field)
		}
		if err := dec.Decode(slot); err != nil {
			return rr, jsonError(err, field)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing '}'
		return rr, jsonError(err, at)
	}
	return rr, nil
}

// tokenType names a json.Token for messages.
func tokenType(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			return "object"
		case '[':
			return "array"
		}
		return fmt.Sprintf("%q", string(t))
	case string:
		return "string"
	case float64, json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", tok)
}

// convertRecord applies docs/api.md's record rules: key absent or null = no key
// (nil); value null = tombstone (nil); value absent = 400, so a forgotten
// field is not silently a tombstone; "" is an empty, non-nil slice.
func convertRecord(i int, rr rawRecord, enc jsonrec.Encoding, allowPartition bool) (broker.ProduceRecord, error) {
	rec := broker.ProduceRecord{Partition: -1}
	if !isNull(rr.Partition) {
		if !allowPartition {
			return rec, badRequest("records[%d].partition is not allowed here: the partition is in the path", i)
		}
		p, err := rawInt(rr.Partition, fmt.Sprintf("records[%d].partition", i), math.MaxInt32)
		if err != nil {
			return rec, err
		}
		rec.Partition = int(p)
	}
	if !isNull(rr.Key) {
		k, err := recordBytes(rr.Key, enc, fmt.Sprintf("records[%d].key", i))
		if err != nil {
			return rec, err
		}
		rec.Key = k
	}
	if rr.Value == nil {
		return rec, badRequest("records[%d].value is required (use null for a tombstone)", i)
	}
	if !isNull(rr.Value) {
		v, err := recordBytes(rr.Value, enc, fmt.Sprintf("records[%d].value", i))
		if err != nil {
			return rec, err
		}
		rec.Value = v
	}
	var err error
	if rec.Headers, err = decodeHeaders(rr.Headers, enc, i); err != nil {
		return rec, err
	}
	if !isNull(rr.Timestamp) {
		ts, err := rawInt(rr.Timestamp, fmt.Sprintf("records[%d].timestamp", i), math.MaxInt64)
		if err != nil {
			return rec, err
		}
		rec.Timestamp, rec.HasTimestamp = ts, true
	}
	if n := jsonrec.RecordSize(&rec); n > broker.MaxRecordBytes {
		return rec, tooLarge("records[%d]: key, value and headers are %d bytes, more than the %d a record may have", i, n, broker.MaxRecordBytes)
	}
	return rec, nil
}

// recordBytes decodes a non-null key, value or header value in enc.
func recordBytes(raw json.RawMessage, enc jsonrec.Encoding, what string) ([]byte, error) {
	if enc == jsonrec.JSON {
		return jsonText(raw, what)
	}
	return rawBytes(raw, enc, what)
}

// jsonText is a JSON value of "encoding":"json" as it is stored: its
// compact UTF-8 text (json.Compact: white space outside strings
// dropped, everything else as sent). Never nil.
func jsonText(raw json.RawMessage, what string) ([]byte, error) {
	if !utf8.Valid(raw) {
		return nil, badRequest("%s is not valid UTF-8; send such bytes with \"encoding\":\"base64\"", what)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	if err := json.Compact(&buf, raw); err != nil {
		return nil, jsonError(err, what)
	}
	return buf.Bytes(), nil
}

// decodeHeaders decodes records[i].headers: null, absent or [] (no
// headers: nil), or an array of up to jsonrec.MaxHeaders objects of
// headerFields. A key is a string of 1 to jsonrec.MaxHeaderKeySize bytes in every
// encoding; a value follows enc, and null or absent is a null value.
func decodeHeaders(raw json.RawMessage, enc jsonrec.Encoding, i int) ([]broker.Header, error) {
	if isNull(raw) {
		return nil, nil
	}
	what := fmt.Sprintf("records[%d].headers", i)
	if raw[0] != '[' {
		return nil, badRequest("%s: got JSON %s, want an array of {\"key\":..,\"value\":..}", what, jsonType(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '['
		return nil, jsonError(err, what)
	}
	var hs []broker.Header
	for j := 0; dec.More(); j++ {
		if j == jsonrec.MaxHeaders {
			return nil, badRequest("%s has more than %d headers, at most %d a record may have", what, jsonrec.MaxHeaders, jsonrec.MaxHeaders)
		}
		at := fmt.Sprintf("%s[%d]", what, j)
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonError(err, at)
		}
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return nil, badRequest("%s: got JSON %s, want an object {\"key\":..,\"value\":..}", at, tokenType(tok))
		}
		var key, val json.RawMessage
		for dec.More() {
			tok, err := dec.Token()
			if err != nil {
				return nil, jsonError(err, at)
			}
			name, _ := tok.(string)
			field := at + "." + name
			var slot *json.RawMessage
			switch name {
			case "key":
				slot = &key
			case "value":
				slot = &val
			default:
				return nil, unknownField(headerFields, field, name)
			}
			if *slot != nil {
				return nil, badRequest("%s is given twice", field)
			}
			if err := dec.Decode(slot); err != nil {
				return nil, jsonError(err, field)
			}
		}
		if _, err := dec.Token(); err != nil { // '}'
			return nil, jsonError(err, at)
		}
		if isNull(key) {
			return nil, badRequest("%s.key is required: a string of 1 to %d bytes", at, jsonrec.MaxHeaderKeySize)
		}
		k, err := rawString(key, at+".key")
		if err != nil {
			return nil, err
		}
		if len(k) == 0 || len(k) > jsonrec.MaxHeaderKeySize {
			return nil, badRequest("%s.key is %d bytes: want 1 to %d", at, len(k), jsonrec.MaxHeaderKeySize)
		}
		h := broker.Header{Key: string(k)}
		if !isNull(val) {
			if h.Value, err = recordBytes(val, enc, at+".value"); err != nil {
				return nil, err
			}
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// decodeArray decodes raw, a JSON array or null (nil result), element by
// element, refusing more than max elements with 413 before decoding them.
func decodeArray[T any](raw json.RawMessage, what string, max int) ([]T, error) {
	if isNull(raw) {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, badRequest("%s: got JSON %s, want an array", what, jsonType(raw))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if _, err := dec.Token(); err != nil { // '['
		return nil, jsonError(err, what)
	}
	out := []T{}
	for dec.More() {
		if len(out) == max {
			return nil, tooLarge("%s has more than %d entries", what, max)
		}
		var (
			el json.RawMessage
			v  T
		)
		at := fmt.Sprintf("%s[%d]", what, len(out))
		if err := dec.Decode(&el); err != nil {
			return nil, jsonError(err, at)
		}
		if err := strictUnmarshal(el, at, &v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}
