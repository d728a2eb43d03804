package jsonrec

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"math/bits"
	"unicode/utf8"

	"github.com/tierlog/tierlog/internal/jsonx"
	"github.com/tierlog/tierlog/pkg/broker"
)

// ScanProduce decodes a produce body of the plain shape,
//
//	{"encoding":"utf8"|"base64"|"json"|null,"records":[{"key":..,"value":..,"partition":..,
//	 "headers":[{"key":..,"value":..}],"timestamp":..}],"expected_offset":N|null}
//
// with the members in any order, each at most once, spelt exactly so
// (no escapes in names), keys and values strings or null (any JSON value
// with "encoding":"json", which then comes before "records"), numbers
// plain non-negative integers, and every rule of the API's produce body
// holding (docs/api.md). It gives the same records the API's encoding/json
// decoder does (utf8 keys and values alias body). ok is false for anything
// else, valid or not, and then that decoder must answer: this scanner
// never makes an error of its own.
func ScanProduce(body []byte, allowPartition bool) (recs []broker.ProduceRecord, expected *int64, ok bool) {
	s := scanner{b: body}
	var (
		enc                        = UTF8
		haveEnc, haveRecs, haveExp bool
	)
	if !s.consume('{') {
		return nil, nil, false
	}
	for {
		name, esc, ok := s.str()
		if !ok || esc || !s.consume(':') {
			return nil, nil, false
		}
		switch string(name) {
		case "encoding":
			if haveEnc {
				return nil, nil, false
			}
			haveEnc = true
			if s.null() {
				break
			}
			v, esc, ok := s.str()
			switch {
			case !ok || esc:
				return nil, nil, false
			case string(v) == "utf8":
			case string(v) == "base64":
				enc = Base64
			case string(v) == "json" && !haveRecs:
				enc = JSON
			default:
				return nil, nil, false
			}
		case "records":
			if haveRecs {
				return nil, nil, false
			}
			haveRecs = true
			if recs, ok = s.records(allowPartition, enc == JSON); !ok {
				return nil, nil, false
			}
		case "expected_offset":
			if haveExp {
				return nil, nil, false
			}
			haveExp = true
			if s.null() {
				break
			}
			n, ok := s.uint(math.MaxInt64)
			if !ok {
				return nil, nil, false
			}
			expected = &n
		default:
			return nil, nil, false
		}
		if s.consume('}') {
			break
		}
		if !s.consume(',') {
			return nil, nil, false
		}
	}
	if s.skipSpace(); s.i != len(s.b) || len(recs) == 0 {
		return nil, nil, false
	}
	if enc == Base64 && !decodeBase64Records(recs) {
		return nil, nil, false
	}
	for i := range recs {
		if RecordSize(&recs[i]) > broker.MaxRecordBytes {
			return nil, nil, false
		}
	}
	return recs, expected, true
}

// decodeBase64Records replaces each non-nil key, value and header value
// of recs by its strict base64 decoding (DecodeBase64), all into one
// buffer.
func decodeBase64Records(recs []broker.ProduceRecord) bool {
	n := 0
	for i := range recs {
		n += strictBase64.DecodedLen(len(recs[i].Key)) + strictBase64.DecodedLen(len(recs[i].Value))
		for _, h := range recs[i].Headers {
			n += strictBase64.DecodedLen(len(h.Value))
		}
	}
	arena := make([]byte, n)
	dec := func(b []byte) ([]byte, bool) {
		if b == nil {
			return nil, true
		}
		if bytes.ContainsAny(b, "\r\n") {
			return nil, false
		}
		m, err := strictBase64.Decode(arena, b)
		if err != nil {
			return nil, false
		}
		out := arena[:m:m]
		arena = arena[m:]
		return out, true
	}
	for i := range recs {
		var ok bool
		if recs[i].Key, ok = dec(recs[i].Key); !ok {
			return false
		}
		if recs[i].Value, ok = dec(recs[i].Value); !ok {
			return false
		}
		for j := range recs[i].Headers {
			h := &recs[i].Headers[j]
			if h.Value, ok = dec(h.Value); !ok {
				return false
			}
		}
	}
	return true
}

// scanner walks a JSON text; every method skips the white space before
// what it reads.
type scanner struct {
	b []byte
	i int

	// Headers of every record share one growing array (each record's
	// capped to its own), and repeated header keys one string.
	hs   []broker.Header
	keys map[string]string
}

func (s *scanner) skipSpace() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// consume reads the byte c if it comes next.
func (s *scanner) consume(c byte) bool {
	s.skipSpace()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

// null reads the literal null if it comes next.
func (s *scanner) null() bool {
	s.skipSpace()
	if len(s.b)-s.i >= 4 && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// uint reads a non-negative JSON integer up to max: 0 or a digit 1-9
// followed by digits. What follows it is the caller's to check (a '.',
// 'e' or another digit is never a separator).
func (s *scanner) uint(max int64) (int64, bool) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] < '0' || s.b[s.i] > '9' {
		return 0, false
	}
	if s.b[s.i] == '0' {
		s.i++
		return 0, true
	}
	var n int64
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		d := int64(s.b[s.i] - '0')
		if n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
		s.i++
	}
	return n, true
}

// str reads a JSON string that is valid UTF-8 and returns its body, the
// bytes between the quotes (capped: appends never reach past it), and
// whether it has escapes.
func (s *scanner) str() (body []byte, esc, ok bool) {
	s.skipSpace()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false, false
	}
	start := s.i + 1
	i := start
	b := s.b
	nonASCII, tried := false, false
	for {
		// Skip bytes that are plain, 8 at a time: up to jsonx.LongString
		// bytes, then to the end.
		lim := len(b)
		if !tried {
			lim = min(len(b), start+jsonx.LongString)
		}
		marked := false
		for i+8 <= lim {
			m := jsonx.SpecialMask(binary.LittleEndian.Uint64(b[i:]), !nonASCII)
			if m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				marked = true
				break
			}
			i += 8
		}
		if !marked && !tried && lim < len(b) {
			// A long string: if the rest is plain too, the runtime's
			// vector IndexByte finds its end faster.
			tried = true
			if q := bytes.IndexByte(b[i:], '"'); q >= 0 && !nonASCII && !esc && jsonx.PlainUnquoted(b[i:i+q]) {
				end := i + q
				s.i = end + 1
				return b[start:end:end], false, true
			}
			continue
		}
		if i >= len(b) {
			return nil, false, false
		}
		switch c := b[i]; {
		case c == '"':
			body = b[start:i:i]
			s.i = i + 1
			if nonASCII && !utf8.Valid(body) {
				return nil, false, false
			}
			return body, esc, true
		case c == '\\':
			esc = true
			i += 2 // the escaped byte: unescape checks what follows
		case c < 0x20:
			return nil, false, false
		case c >= utf8.RuneSelf:
			nonASCII = true
			i++
		default:
			i++ // a false mark of jsonx.SpecialMask, or the tail
		}
	}
}

// value reads a key or value: nil for null, else the string's bytes
// (body's own when it has no escapes).
func (s *scanner) value() ([]byte, bool) {
	if s.null() {
		return nil, true
	}
	body, esc, ok := s.str()
	if !ok || !esc {
		return body, ok
	}
	return unescape(body)
}

// field reads a key or value in the mode of the records: a string (or
// null) as value does, or with asJSON any JSON value as jsonValue does.
func (s *scanner) field(asJSON bool) ([]byte, bool) {
	if asJSON {
		return s.jsonValue()
	}
	return s.value()
}

// records reads the records array: 1 to broker.MaxBatchRecords
// objects.
func (s *scanner) records(allowPartition, asJSON bool) ([]broker.ProduceRecord, bool) {
	if !s.consume('[') {
		return nil, false
	}
	// One allocation: every record opens with a '{' (values may hold
	// more of them; the cap bounds the guess).
	recs := make([]broker.ProduceRecord, 0, min(bytes.Count(s.b[s.i:], []byte{'{'}), broker.MaxBatchRecords))
	for {
		if len(recs) == broker.MaxBatchRecords || !s.consume('{') {
			return nil, false
		}
		rec := broker.ProduceRecord{Partition: -1}
		var haveKey, haveValue, havePart, haveHeaders, haveTime bool
		for {
			name, esc, ok := s.str()
			if !ok || esc || !s.consume(':') {
				return nil, false
			}
			switch string(name) {
			case "key":
				if haveKey {
					return nil, false
				}
				haveKey = true
				if rec.Key, ok = s.field(asJSON); !ok {
					return nil, false
				}
			case "value":
				if haveValue {
					return nil, false
				}
				haveValue = true
				if rec.Value, ok = s.field(asJSON); !ok {
					return nil, false
				}
			case "partition":
				if havePart {
					return nil, false
				}
				havePart = true
				if s.null() {
					break
				}
				p, ok := s.uint(math.MaxInt32)
				if !ok || !allowPartition {
					return nil, false
				}
				rec.Partition = int(p)
			case "headers":
				if haveHeaders {
					return nil, false
				}
				haveHeaders = true
				if rec.Headers, ok = s.headers(asJSON); !ok {
					return nil, false
				}
			case "timestamp":
				if haveTime {
					return nil, false
				}
				haveTime = true
				if s.null() {
					break
				}
				if rec.Timestamp, ok = s.uint(math.MaxInt64); !ok {
					return nil, false
				}
				rec.HasTimestamp = true
			default:
				return nil, false
			}
			if s.consume('}') {
				break
			}
			if !s.consume(',') {
				return nil, false
			}
		}
		if !haveValue {
			return nil, false
		}
		recs = append(recs, rec)
		if s.consume(']') {
			return recs, true
		}
		if !s.consume(',') {
			return nil, false
		}
	}
}

// headers reads a record's headers: null or an array of 0 to MaxHeaders
// objects {"key":..,"value":..} (nil for none), each key a string of 1
// to MaxHeaderKeySize bytes, each value absent, null or read as field
// reads it.
func (s *scanner) headers(asJSON bool) ([]broker.Header, bool) {
	if s.null() {
		return nil, true
	}
	if !s.consume('[') {
		return nil, false
	}
	if s.consume(']') {
		return nil, true
	}
	start := len(s.hs)
	for {
		if len(s.hs)-start == MaxHeaders || !s.consume('{') {
			return nil, false
		}
		var (
			h                  broker.Header
			haveKey, haveValue bool
		)
		for {
			name, esc, ok := s.str()
			if !ok || esc || !s.consume(':') {
				return nil, false
			}
			switch string(name) {
			case "key":
				if haveKey || s.null() {
					return nil, false
				}
				haveKey = true
				k, ok := s.value()
				if !ok || len(k) == 0 || len(k) > MaxHeaderKeySize {
					return nil, false
				}
				h.Key = s.key(k)
			case "value":
				if haveValue {
					return nil, false
				}
				haveValue = true
				if h.Value, ok = s.field(asJSON); !ok {
					return nil, false
				}
			default:
				return nil, false
			}
			if s.consume('}') {
				break
			}
			if !s.consume(',') {
				return nil, false
			}
		}
		if !haveKey {
			return nil, false
		}
		s.hs = append(s.hs, h)
		if s.consume(']') {
			return s.hs[start:len(s.hs):len(s.hs)], true
		}
		if !s.consume(',') {
			return nil, false
		}
	}
}

// key is k as a string, the same string for the same bytes within one
// body.
func (s *scanner) key(k []byte) string {
	if v, ok := s.keys[string(k)]; ok {
		return v
	}
	if s.keys == nil {
		s.keys = make(map[string]string)
	}
	v := string(k)
	s.keys[v] = v
	return v
}

// maxScanDepth is how deep jsonValue follows nested arrays and objects;
// deeper values are left to the reference decoder.
const maxScanDepth = 64

// jsonValue reads any JSON value for "encoding":"json": nil for null,
// else its compact text (the body's own bytes when the value has no
// white space, json.Compact's copy when it has). Strings must be valid
// UTF-8; their escapes are checked but kept as sent, as json.Compact
// keeps them.
func (s *scanner) jsonValue() ([]byte, bool) {
	if s.null() {
		return nil, true
	}
	s.skipSpace()
	start := s.i
	if !s.skipValue(0) {
		return nil, false
	}
	text := s.b[start:s.i:s.i]
	if !bytes.ContainsAny(text, " \t\n\r") {
		return text, true
	}
	var buf bytes.Buffer
	if json.Compact(&buf, text) != nil {
		return nil, false
	}
	return buf.Bytes(), true
}

// skipValue reads one JSON value; white space before it is skipped.
func (s *scanner) skipValue(depth int) bool {
	s.skipSpace()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		body, esc, ok := s.str()
		return ok && (!esc || validEscapes(body))
	case '{', '[':
		if depth == maxScanDepth {
			return false
		}
		end := byte('}')
		if c == '[' {
			end = ']'
		}
		s.i++
		if s.consume(end) {
			return true
		}
		for {
			if c == '{' {
				body, esc, ok := s.str()
				if !ok || (esc && !validEscapes(body)) || !s.consume(':') {
					return false
				}
			}
			if !s.skipValue(depth + 1) {
				return false
			}
			if s.consume(end) {
				return true
			}
			if !s.consume(',') {
				return false
			}
		}
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	}
	return s.number()
}

// literal reads lit if it comes next.
func (s *scanner) literal(lit string) bool {
	if len(s.b)-s.i >= len(lit) && string(s.b[s.i:s.i+len(lit)]) == lit {
		s.i += len(lit)
		return true
	}
	return false
}

// number reads a JSON number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() bool {
	b, i := s.b, s.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	s.i = i
	return true
}

// validEscapes reports whether every escape in the body of a JSON string
// is one JSON has (surrogates unpaired or not: they are JSON).
func validEscapes(b []byte) bool {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		i++
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		case 'u':
			if _, ok := hex4ok(b, i+1); !ok {
				return false
			}
			i += 4
		default:
			return false
		}
	}
	return true
}

// unescape decodes the body of a JSON string with escapes, as
// encoding/json does, refusing (false) what rawString refuses or
// encoding/json would refuse: a bad escape, an unpaired surrogate.
func unescape(b []byte) ([]byte, bool) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return append(out, b[i:]...), true
		}
		out = append(out, b[i:i+j]...)
		i += j + 1
		if i >= len(b) {
			return nil, false
		}
		c := b[i]
		i++
		switch c {
		case '"', '\\', '/':
			out = append(out, c)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4ok(b, i)
			if !ok {
				return nil, false
			}
			i += 4
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return nil, false
			case r >= 0xD800 && r <= 0xDBFF:
				if i+2 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
					return nil, false
				}
				lo, ok := hex4ok(b, i+2)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return nil, false
				}
				i += 6
				r = 0x10000 + (r-0xD800)<<10 + (lo - 0xDC00)
			}
			out = utf8.AppendRune(out, r)
		default:
			return nil, false
		}
	}
	return out, true
}

// hex4ok decodes the four hex digits at b[i:].
func hex4ok(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		r <<= 4
		switch {
		case c >= '0' && c <= '9':
			r |= rune(c - '0')
		case c >= 'a' && c <= 'f':
			r |= rune(c - 'a' + 10)
		case c >= 'A' && c <= 'F':
			r |= rune(c - 'A' + 10)
		default:
			return 0, false
		}
	}
	return r, true
}
