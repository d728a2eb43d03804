package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
)

func sampleRecords() []Record {
	return []Record{
		{Key: []byte("k1"), Value: []byte("hello"), Partition: 0},
		{Key: nil, Value: []byte("no key"), Partition: -1},
		{Key: []byte{}, Value: []byte{}, Partition: 7},
		{Key: []byte("tomb"), Value: nil, Partition: -1},
		{Key: nil, Value: nil, Partition: 2147483647},
		{Key: []byte{0xff, 0x00, 0xfe}, Value: []byte("\t\n\x00 ünï"), Partition: 1},
	}
}

func encodeRequest(t testing.TB, recs []Record) []byte {
	t.Helper()
	b, err := AppendProduceRequest(nil, len(recs), func(i int) Record { return recs[i] })
	if err != nil {
		t.Fatalf("AppendProduceRequest: %v", err)
	}
	return b
}

func sampleResults() []Result {
	return []Result{
		{Partition: 0, Offset: 41, Timestamp: 1764500000000},
		{Partition: 3, Offset: -1, Timestamp: -1, ErrCode: "unavailable", ErrMessage: "lease busy"},
		{Partition: 0, Offset: 42, Timestamp: 1764500000000},
	}
}

func encodeAnswer(t testing.TB, res []Result) []byte {
	t.Helper()
	b, err := AppendProduceAnswer(nil, len(res), func(i int) Result { return res[i] })
	if err != nil {
		t.Fatalf("AppendProduceAnswer: %v", err)
	}
	return b
}

var sampleBounds = Bounds{NextOffset: 45, HighWatermark: 50, LogStartOffset: 3}

func sampleFetched() []FetchedRecord {
	return []FetchedRecord{
		{Offset: 42, Timestamp: 1764500000000, Key: []byte("k"), Value: []byte("v")},
		{Offset: 43, Timestamp: 1764500000001, Key: nil, Value: nil},
		{Offset: 44, Timestamp: 1764500000002, Key: []byte{}, Value: []byte{0, 1, 2}},
	}
}

func encodeFetch(t testing.TB, b Bounds, recs []FetchedRecord) []byte {
	t.Helper()
	out, err := AppendFetchAnswer(nil, b, len(recs), func(i int) FetchedRecord { return recs[i] })
	if err != nil {
		t.Fatalf("AppendFetchAnswer: %v", err)
	}
	return out
}

// sameBytes compares keys and values, telling nil from empty.
func sameBytes(a, b []byte) bool {
	return (a == nil) == (b == nil) && bytes.Equal(a, b)
}

func TestRoundTrip(t *testing.T) {
	recs := sampleRecords()
	got, err := DecodeProduceRequest(encodeRequest(t, recs))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(recs) {
		t.Fatalf("%d records, want %d", len(got), len(recs))
	}
	for i := range recs {
		if !sameBytes(got[i].Key, recs[i].Key) || !sameBytes(got[i].Value, recs[i].Value) || got[i].Partition != recs[i].Partition {
			t.Errorf("record %d: got %+v want %+v", i, got[i], recs[i])
		}
	}

	res := sampleResults()
	gotRes, err := DecodeProduceAnswer(encodeAnswer(t, res))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotRes, res) {
		t.Errorf("answer: got %+v want %+v", gotRes, res)
	}

	fr := sampleFetched()
	b, gotFr, err := DecodeFetchAnswer(encodeFetch(t, sampleBounds, fr))
	if err != nil {
		t.Fatal(err)
	}
	if b != sampleBounds || len(gotFr) != len(fr) {
		t.Fatalf("fetch: bounds %+v, %d records", b, len(gotFr))
	}
	for i := range fr {
		g := gotFr[i]
		if g.Offset != fr[i].Offset || g.Timestamp != fr[i].Timestamp || !sameBytes(g.Key, fr[i].Key) || !sameBytes(g.Value, fr[i].Value) {
			t.Errorf("fetched %d: got %+v want %+v", i, g, fr[i])
		}
	}

	// Empty bodies are well-formed; the API decides whether zero records
	// make sense.
	if got, err := DecodeProduceRequest(encodeRequest(t, nil)); err != nil || len(got) != 0 {
		t.Errorf("empty request: %v %v", got, err)
	}
}

// TestAppendKeepsDst checks that encoders append after what dst holds and
// leave it alone on error.
func TestAppendKeepsDst(t *testing.T) {
	prefix := []byte("prefix")
	b, err := AppendProduceRequest(bytes.Clone(prefix), 1, func(int) Record { return Record{Value: []byte("v"), Partition: -1} })
	if err != nil || !bytes.HasPrefix(b, prefix) {
		t.Fatalf("append: %q %v", b, err)
	}
	if _, err := DecodeProduceRequest(b[len(prefix):]); err != nil {
		t.Fatalf("decode after prefix: %v", err)
	}
	big := make([]byte, MaxRecordBytes+1)
	out, err := AppendProduceRequest(bytes.Clone(prefix), 1, func(int) Record { return Record{Value: big, Partition: -1} })
	if !errors.Is(err, ErrTooLarge) || !bytes.Equal(out, prefix) {
		t.Fatalf("oversize record: %v, dst %q", err, out)
	}
}

func TestEncoderLimits(t *testing.T) {
	one := func(int) Record { return Record{Value: []byte("v"), Partition: -1} }
	if _, err := AppendProduceRequest(nil, MaxRecords+1, one); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too many records: %v", err)
	}
	if _, err := AppendProduceRequest(nil, MaxRecords, one); err != nil {
		t.Errorf("max records: %v", err)
	}
	exact := make([]byte, MaxRecordBytes-2)
	if _, err := AppendProduceRequest(nil, 1, func(int) Record { return Record{Key: []byte("k"), Value: exact, Partition: -1} }); err != nil {
		t.Errorf("record of exactly the limit minus one: %v", err)
	}
	mib := make([]byte, MaxRecordBytes)
	if _, err := AppendProduceRequest(nil, 6, func(int) Record { return Record{Value: mib, Partition: -1} }); !errors.Is(err, ErrTooLarge) {
		t.Errorf("body over 5 MiB: %v", err)
	}
	if _, err := AppendProduceRequest(nil, 1, func(int) Record { return Record{Partition: -2} }); !errors.Is(err, ErrFormat) {
		t.Errorf("partition -2: %v", err)
	}
	if _, err := AppendProduceAnswer(nil, 1, func(int) Result { return Result{ErrCode: strings.Repeat("c", 256)} }); !errors.Is(err, ErrFormat) {
		t.Errorf("long code: %v", err)
	}
	// Long messages are cut on a rune boundary.
	long := strings.Repeat("é", MaxMessageBytes) // 2 bytes each
	b, err := AppendProduceAnswer(nil, 1, func(int) Result { return Result{ErrCode: "internal", ErrMessage: "x" + long} })
	if err != nil {
		t.Fatal(err)
	}
	res, err := DecodeProduceAnswer(b)
	if err != nil {
		t.Fatal(err)
	}
	if m := res[0].ErrMessage; len(m) > MaxMessageBytes || len(m) < MaxMessageBytes-1 || !strings.HasPrefix(m, "xé") || strings.ContainsRune(m, '\uFFFD') {
		t.Errorf("cut message: %d bytes %q...", len(m), m[:10])
	}
}

// TestTruncatedEverywhere cuts each kind of body at every length: each
// prefix must be refused with ErrTruncated or ErrFormat, never a panic or
// success.
func TestTruncatedEverywhere(t *testing.T) {
	bodies := map[string][]byte{
		"request": encodeRequest(t, sampleRecords()),
		"answer":  encodeAnswer(t, sampleResults()),
		"fetch":   encodeFetch(t, sampleBounds, sampleFetched()),
	}
	for name, full := range bodies {
		for n := 0; n < len(full); n++ {
			cut := bytes.Clone(full[:n])
			err := decodeAny(name, cut)
			if err == nil {
				t.Fatalf("%s cut at %d of %d: accepted", name, n, len(full))
			}
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrFormat) {
				t.Fatalf("%s cut at %d: %v is neither truncated nor format", name, n, err)
			}
			// A cut inside the body (not the header) must say truncated,
			// not blame a checksum.
			if n >= HeaderSize && !errors.Is(err, ErrTruncated) {
				t.Fatalf("%s cut at %d: %v, want ErrTruncated", name, n, err)
			}
		}
	}
}

func decodeAny(kind string, b []byte) error {
	var err error
	switch kind {
	case "request":
		_, err = DecodeProduceRequest(b)
	case "answer":
		_, err = DecodeProduceAnswer(b)
	case "fetch":
		_, _, err = DecodeFetchAnswer(b)
	}
	return err
}

// fixCRC recomputes the checksum after a test changed bytes, so the test
// reaches the check it means to.
func fixCRC(b []byte) []byte {
	if len(b) >= HeaderSize {
		binary.LittleEndian.PutUint32(b[12:], crc32.Checksum(b[HeaderSize:], castagnoli))
	}
	return b
}

// TestCorrupt changes one thing at a time in valid bodies.
func TestCorrupt(t *testing.T) {
	req := encodeRequest(t, []Record{{Key: []byte("key"), Value: []byte("value"), Partition: 3}, {Value: []byte("v"), Partition: -1}})
	fetch := encodeFetch(t, sampleBounds, []FetchedRecord{{Offset: 1, Timestamp: 2, Key: []byte("k"), Value: []byte("v")}})
	answer := encodeAnswer(t, []Result{{Partition: 0, ErrCode: "unavailable", ErrMessage: "m"}})
	const rec0 = HeaderSize // first produce record
	put32 := func(b []byte, at int, v uint32) []byte { binary.LittleEndian.PutUint32(b[at:], v); return b }
	cases := []struct {
		name    string
		kind    string
		body    []byte
		corrupt func([]byte) []byte
		want    error
	}{
		{"bad magic", "request", req, func(b []byte) []byte { b[0] = 'T'; return b }, ErrFormat},
		{"text-transcoded magic", "request", req, func(b []byte) []byte { return append([]byte("\xef\xbf\xbd"), b[1:]...) }, ErrFormat},
		{"version 3", "request", req, func(b []byte) []byte { b[4] = 3; return b }, ErrFormat},
		{"version 1 body as version 2", "request", req, func(b []byte) []byte { b[4] = 2; return b }, ErrTruncated},
		{"wrong kind", "request", req, func(b []byte) []byte { b[5] = byte(KindFetchAnswer); return b }, ErrFormat},
		{"kind zero", "fetch", fetch, func(b []byte) []byte { b[5] = 0; return b }, ErrFormat},
		{"reserved set", "request", req, func(b []byte) []byte { b[7] = 1; return b }, ErrFormat},
		{"checksum", "request", req, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }, ErrFormat},
		{"count too many", "request", req, func(b []byte) []byte { return put32(b, 8, MaxRecords+1) }, ErrTooLarge},
		{"count max uint32", "request", req, func(b []byte) []byte { return put32(b, 8, 0xffffffff) }, ErrTooLarge},
		{"count lies (more than bytes)", "request", req, func(b []byte) []byte { return fixCRC(put32(b, 8, 3)) }, ErrTruncated},
		{"count lies (fewer)", "request", req, func(b []byte) []byte { return fixCRC(put32(b, 8, 1)) }, ErrFormat},
		{"key length lies", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+5, 1000)) }, ErrTruncated},
		{"key length huge", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+5, 0xffffffff)) }, ErrTooLarge},
		{"value length over 1 MiB", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+9, MaxRecordBytes)) }, ErrTooLarge},
		{"value length lies", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+21+9, 2)) }, ErrTruncated},
		{"value length shifts the next header", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+9, 6)) }, ErrTooLarge},
		{"unknown flag", "request", req, func(b []byte) []byte { b[rec0] |= 1 << 5; return fixCRC(b) }, ErrFormat},
		{"failed flag in request", "request", req, func(b []byte) []byte { b[rec0] |= flagFailed; return fixCRC(b) }, ErrFormat},
		{"null key with length", "request", req, func(b []byte) []byte { b[rec0] |= flagKeyNull; return fixCRC(b) }, ErrFormat},
		{"null value with length", "request", req, func(b []byte) []byte { b[rec0] |= flagValueNull; return fixCRC(b) }, ErrFormat},
		{"partition without flag", "request", req, func(b []byte) []byte { b[rec0] &^= flagPartitionSet; return fixCRC(b) }, ErrFormat},
		{"partition over int32", "request", req, func(b []byte) []byte { return fixCRC(put32(b, rec0+1, 1<<31)) }, ErrFormat},
		{"trailing garbage", "request", req, func(b []byte) []byte { return fixCRC(append(b, "junk"...)) }, ErrFormat},
		{"fetch count lies", "fetch", fetch, func(b []byte) []byte { return fixCRC(put32(b, 8, 2)) }, ErrTruncated},
		{"fetch partition flag", "fetch", fetch, func(b []byte) []byte { b[HeaderSize+24] |= flagPartitionSet; return fixCRC(b) }, ErrFormat},
		{"fetch trailing", "fetch", fetch, func(b []byte) []byte { return fixCRC(append(b, 0)) }, ErrFormat},
		{"answer empty code", "answer", answer, func(b []byte) []byte { b[HeaderSize+21] = 0; return fixCRC(b) }, ErrFormat},
		{"answer message lies", "answer", answer, func(b []byte) []byte { b[HeaderSize+22] = 200; return fixCRC(b) }, ErrTruncated},
		{"answer unknown flag", "answer", answer, func(b []byte) []byte { b[HeaderSize] |= flagKeyNull; return fixCRC(b) }, ErrFormat},
		{"answer negative partition", "answer", answer, func(b []byte) []byte { return fixCRC(put32(b, HeaderSize+1, 0x80000000)) }, ErrFormat},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := decodeAny(c.kind, c.corrupt(bytes.Clone(c.body)))
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
		})
	}
}

// TestTooManyRecordsBeforeAllocation sends a header that claims the
// maximum count in a tiny body: refused as truncated without allocating
// room for the records.
func TestTooManyRecordsBeforeAllocation(t *testing.T) {
	b := appendHeader(nil, Version, KindProduceRequest, MaxRecords)
	// A []Record of 10,000 would be 560 KB per call; the refusal itself
	// (an error message) is a few hundred bytes.
	const runs = 100
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range runs {
		if _, err := DecodeProduceRequest(b); !errors.Is(err, ErrTruncated) {
			t.Fatalf("got %v", err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / runs; per > 4096 {
		t.Errorf("%d bytes allocated per refusal of a lying count", per)
	}
	b = appendHeader(nil, Version, KindFetchAnswer, MaxRecords+1)
	if _, _, err := DecodeFetchAnswer(b); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("fetch over max: %v", err)
	}
}

// TestDecodedAliasCapped checks that appending to a decoded key cannot
// overwrite the value after it in the body.
func TestDecodedAliasCapped(t *testing.T) {
	b := encodeRequest(t, []Record{{Key: []byte("k"), Value: []byte("value"), Partition: -1}})
	recs, err := DecodeProduceRequest(b)
	if err != nil {
		t.Fatal(err)
	}
	_ = append(recs[0].Key, 'X')
	if string(recs[0].Value) != "value" {
		t.Fatalf("value clobbered: %q", recs[0].Value)
	}
}

// fuzzSeeds are the seed corpus of FuzzDecode under testdata/fuzz.
// TestFuzzSeeds checks the files hold exactly these; TIERLOG_UPDATE_GOLDEN=1
// rewrites them.
func fuzzSeeds(t testing.TB) map[string][]byte {
	req := encodeRequest(t, sampleRecords())
	maxCount := appendHeader(nil, Version, KindProduceRequest, MaxRecords)
	maxRecord := encodeRequest(t, []Record{{Value: make([]byte, 64), Partition: -1}})
	binary.LittleEndian.PutUint32(maxRecord[HeaderSize+9:], MaxRecordBytes) // lies: 1 MiB announced
	return map[string][]byte{
		"empty":                nil,
		"header-only":          appendHeader(nil, Version, KindProduceRequest, 0),
		"valid-request":        req,
		"valid-answer":         encodeAnswer(t, sampleResults()),
		"valid-fetch":          encodeFetch(t, sampleBounds, sampleFetched()),
		"valid-plus-garbage":   append(bytes.Clone(req), "\x00\xffgarbage"...),
		"max-count-header":     maxCount,
		"over-max-count":       appendHeader(nil, Version, KindFetchAnswer, MaxRecords+1),
		"max-length-record":    fixCRC(maxRecord),
		"text-transcoded-body": bytes.ReplaceAll(req, []byte{0x89}, []byte("\xef\xbf\xbd")),
		"v2-request":           encodeRequestV2(t, sampleRecordsV2()),
		"v2-fetch":             encodeFetchV2(t, sampleBounds, sampleFetchedV2()),
		"v2-answer":            encodeAnswerV2(t, sampleResults()),
		"v2-example":           v2Example(t),
	}
}

func seedFile(b []byte) []byte {
	return fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", b)
}

func TestFuzzSeeds(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzDecode")
	seeds := fuzzSeeds(t)
	if os.Getenv("TIERLOG_UPDATE_GOLDEN") == "1" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, b := range seeds {
			if err := os.WriteFile(filepath.Join(dir, name), seedFile(b), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("%v (run with TIERLOG_UPDATE_GOLDEN=1 to write the seeds)", err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	for name, b := range seeds {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("seed %s: %v (TIERLOG_UPDATE_GOLDEN=1 rewrites)", name, err)
			continue
		}
		if !bytes.Equal(got, seedFile(b)) {
			t.Errorf("seed %s differs from what the encoder writes today (TIERLOG_UPDATE_GOLDEN=1 rewrites)", name)
		}
	}
	if !slices.ContainsFunc(names, func(n string) bool { return n == "valid-request" }) {
		t.Errorf("seed directory lacks valid-request: %v", names)
	}
}

// FuzzDecode feeds arbitrary bytes to every decoder, as sent and with the
// checksum made right (so the fuzzer gets past it). No input may panic;
// an accepted body must respect the limits and re-encode to the same bytes.
func FuzzDecode(f *testing.F) {
	for _, b := range fuzzSeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, in := range [][]byte{data, fixCRC(bytes.Clone(data))} {
			v := VersionOfBody(in)
			if recs, err := DecodeProduceRequest(in); err == nil {
				checkKnown(t, err)
				if len(recs) > MaxRecords {
					t.Fatalf("%d records accepted", len(recs))
				}
				for _, r := range recs {
					if checkRecordSize(0, r.Key, r.Value, r.Headers) != nil || r.Partition < -1 || checkHeaders(0, r.Headers) != nil || r.Timestamp < 0 {
						t.Fatalf("bad record accepted: %+v", r)
					}
				}
				again, err := AppendProduceRequestV(nil, v, len(recs), func(i int) Record { return recs[i] })
				if err != nil || !bytes.Equal(again, in) {
					t.Fatalf("request does not re-encode to its bytes: %v", err)
				}
			} else {
				checkKnown(t, err)
			}
			if res, err := DecodeProduceAnswer(in); err == nil {
				long := slices.ContainsFunc(res, func(r Result) bool { return len(r.ErrMessage) > MaxMessageBytes })
				again, err := AppendProduceAnswerV(nil, v, len(res), func(i int) Result { return res[i] })
				if err != nil || (!long && !bytes.Equal(again, in)) {
					t.Fatalf("answer does not re-encode to its bytes: %v", err)
				}
			} else {
				checkKnown(t, err)
			}
			if b, recs, err := DecodeFetchAnswer(in); err == nil {
				again, err := AppendFetchAnswerV(nil, v, b, len(recs), func(i int) FetchedRecord { return recs[i] })
				if err != nil || !bytes.Equal(again, in) {
					t.Fatalf("fetch answer does not re-encode to its bytes: %v", err)
				}
			} else {
				checkKnown(t, err)
			}
		}
	})
}

func checkKnown(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrFormat) && !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrTooLarge) {
		t.Fatalf("error outside the documented three: %v", err)
	}
}

// BenchmarkCodec measures encode and decode of a produce request of 1000
// records, one b.Run per value size.
func BenchmarkCodec(b *testing.B) {
	for _, size := range []int{100, 1024} {
		recs := make([]Record, 1000)
		for i := range recs {
			recs[i] = Record{Key: fmt.Appendf(nil, "key-%d", i), Value: bytes.Repeat([]byte("v"), size), Partition: -1}
		}
		body := encodeRequest(b, recs)
		b.Run(fmt.Sprintf("encode/value=%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			buf := make([]byte, 0, len(body))
			for b.Loop() {
				buf, _ = AppendProduceRequest(buf[:0], len(recs), func(i int) Record { return recs[i] })
			}
		})
		b.Run(fmt.Sprintf("decode/value=%d", size), func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				if _, err := DecodeProduceRequest(body); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Version 2: headers and producer timestamps.

func sampleRecordsV2() []Record {
	return []Record{
		{Key: []byte("k1"), Value: []byte("hello"), Partition: 0, Timestamp: 1764500000000, HasTimestamp: true,
			Headers: []Header{{Key: "trace-id", Value: []byte("abc")}, {Key: "trace-id", Value: nil}, {Key: "e", Value: []byte{}}}},
		{Key: nil, Value: nil, Partition: -1},
		{Key: []byte{0xff}, Value: []byte{0}, Partition: 3, Timestamp: 0, HasTimestamp: true},
		{Value: []byte("v"), Partition: -1, Headers: []Header{{Key: "ünï", Value: []byte{0xff, 0xfe}}}},
	}
}

func encodeRequestV2(t testing.TB, recs []Record) []byte {
	t.Helper()
	b, err := AppendProduceRequestV(nil, Version2, len(recs), func(i int) Record { return recs[i] })
	if err != nil {
		t.Fatalf("AppendProduceRequestV: %v", err)
	}
	return b
}

func sampleFetchedV2() []FetchedRecord {
	return []FetchedRecord{
		{Offset: 42, Timestamp: 5, Key: []byte("k"), Value: []byte("v"), Headers: []Header{{Key: "h", Value: []byte("x")}, {Key: "n"}}},
		{Offset: 43, Timestamp: 1764500000001},
	}
}

func encodeFetchV2(t testing.TB, b Bounds, recs []FetchedRecord) []byte {
	t.Helper()
	out, err := AppendFetchAnswerV(nil, Version2, b, len(recs), func(i int) FetchedRecord { return recs[i] })
	if err != nil {
		t.Fatalf("AppendFetchAnswerV: %v", err)
	}
	return out
}

func encodeAnswerV2(t testing.TB, res []Result) []byte {
	t.Helper()
	b, err := AppendProduceAnswerV(nil, Version2, len(res), func(i int) Result { return res[i] })
	if err != nil {
		t.Fatalf("AppendProduceAnswerV: %v", err)
	}
	return b
}

// v2Example is the example of docs/api-binary.md: record 0 key "k1",
// value "hi", partition 0, timestamp 1764500000000, header trace-id=abc;
// record 1 no key, tombstone, no partition, no timestamp, a header "n"
// with a null value.
func v2Example(t testing.TB) []byte {
	return encodeRequestV2(t, []Record{
		{Key: []byte("k1"), Value: []byte("hi"), Partition: 0, Timestamp: 1764500000000, HasTimestamp: true, Headers: []Header{{Key: "trace-id", Value: []byte("abc")}}},
		{Partition: -1, Headers: []Header{{Key: "n"}}},
	})
}

func TestVersion2RoundTrip(t *testing.T) {
	recs := sampleRecordsV2()
	got, err := DecodeProduceRequest(encodeRequestV2(t, recs))
	if err != nil {
		t.Fatal(err)
	}
	for i := range recs {
		w, g := recs[i], got[i]
		if !sameBytes(w.Key, g.Key) || !sameBytes(w.Value, g.Value) || w.Partition != g.Partition ||
			w.Timestamp != g.Timestamp || w.HasTimestamp != g.HasTimestamp || len(w.Headers) != len(g.Headers) {
			t.Fatalf("record %d: got %+v, want %+v", i, g, w)
		}
		for j := range w.Headers {
			if w.Headers[j].Key != g.Headers[j].Key || !sameBytes(w.Headers[j].Value, g.Headers[j].Value) {
				t.Errorf("record %d header %d: got %+v, want %+v", i, j, g.Headers[j], w.Headers[j])
			}
		}
	}
	fetched := sampleFetchedV2()
	_, fg, err := DecodeFetchAnswer(encodeFetchV2(t, sampleBounds, fetched))
	if err != nil || len(fg) != 2 || len(fg[0].Headers) != 2 || fg[0].Headers[1].Value != nil || string(fg[0].Headers[0].Value) != "x" || fg[1].Headers != nil {
		t.Fatalf("fetch v2: %+v %v", fg, err)
	}
	// Version 1 leaves headers out of a fetch answer and refuses them
	// (and timestamps) in a request.
	_, f1, err := DecodeFetchAnswer(encodeFetch(t, sampleBounds, fetched))
	if err != nil || f1[0].Headers != nil || string(f1[0].Value) != "v" {
		t.Fatalf("fetch v1 of records with headers: %+v %v", f1, err)
	}
	if _, err := AppendProduceRequest(nil, 1, func(int) Record { return recs[0] }); !errors.Is(err, ErrFormat) {
		t.Errorf("v1 request with headers: %v, want ErrFormat", err)
	}
	// A v2 answer decodes as v1's does.
	res, err := DecodeProduceAnswer(encodeAnswerV2(t, sampleResults()))
	if err != nil || len(res) != len(sampleResults()) || res[0].Offset != 41 {
		t.Fatalf("answer v2: %+v %v", res, err)
	}
}

func TestVersion2Refusals(t *testing.T) {
	rec := func(r Record) func(int) Record { return func(int) Record { return r } }
	many := make([]Header, MaxHeaders+1)
	for i := range many {
		many[i].Key = "h"
	}
	for _, tc := range []struct {
		name string
		r    Record
		want error
	}{
		{"65 headers", Record{Partition: -1, Headers: many}, ErrFormat},
		{"empty key", Record{Partition: -1, Headers: []Header{{Key: ""}}}, ErrFormat},
		{"long key", Record{Partition: -1, Headers: []Header{{Key: string(make([]byte, 257))}}}, ErrFormat},
		{"non-UTF-8 key", Record{Partition: -1, Headers: []Header{{Key: "\xff"}}}, ErrFormat},
		{"negative timestamp", Record{Partition: -1, Timestamp: -1, HasTimestamp: true}, ErrFormat},
		{"over 1 MiB with headers", Record{Partition: -1, Value: make([]byte, MaxRecordBytes), Headers: []Header{{Key: "k"}}}, ErrTooLarge},
	} {
		if _, err := AppendProduceRequestV(nil, Version2, 1, rec(tc.r)); !errors.Is(err, tc.want) {
			t.Errorf("%s: encode: %v, want %v", tc.name, err, tc.want)
		}
	}
	// The decoder refuses the same, in bytes written by hand.
	good := v2Example(t)
	for _, tc := range []struct {
		name string
		edit func(b []byte)
		want error
	}{
		{"timestamp without its flag", func(b []byte) { b[HeaderSize] &^= flagTimestampSet }, ErrFormat},
		{"unknown record flag", func(b []byte) { b[HeaderSize] |= 1 << 5 }, ErrFormat},
		{"header count 65", func(b []byte) { binary.LittleEndian.PutUint16(b[HeaderSize+21:], 65) }, ErrFormat},
		{"header key length 0", func(b []byte) { binary.LittleEndian.PutUint16(b[HeaderSize+23+4+1:], 0) }, ErrFormat},
		{"unknown header flag", func(b []byte) { b[HeaderSize+23+4] = 4 }, ErrFormat},
		{"header value lies", func(b []byte) { binary.LittleEndian.PutUint32(b[HeaderSize+23+4+3:], 1000) }, ErrTruncated},
		{"negative timestamp", func(b []byte) { binary.LittleEndian.PutUint64(b[HeaderSize+5:], 1<<63) }, ErrFormat},
		{"version 3", func(b []byte) { b[4] = 3 }, ErrFormat},
	} {
		b := bytes.Clone(good)
		tc.edit(b)
		if _, err := DecodeProduceRequest(fixCRC(b)); !errors.Is(err, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
}

// TestVersion2Example pins the bytes of docs/api-binary.md's version 2
// example.
func TestVersion2Example(t *testing.T) {
	const want = "" +
		"89544c420201000002000000ed6fca5f" + // header: v2, kind 1, 2 records, crc
		"1400000000" + "004d65d49a010000" + "02000000" + "02000000" + "0100" + // flags, p, ts, key, value, 1 header
		"6b31" + "6869" + // "k1" "hi"
		"00" + "0800" + "03000000" + "74726163652d6964" + "616263" + // header trace-id=abc
		"0300000000" + "0000000000000000" + "00000000" + "00000000" + "0100" + // no key, tombstone, 1 header
		"02" + "0100" + "00000000" + "6e" // header n, null value
	got := fmt.Sprintf("%x", v2Example(t))
	if got != want {
		t.Errorf("example bytes\n got %s\nwant %s", got, want)
	}
}
