// Package objtest is the conformance suite for objstore.Store. Every
// adapter (objstore/mem, objstore/local, objstore/s3) and every wrapper
// runs it from its own tests:
//
//	func TestConformance(t *testing.T) {
//		objtest.Run(t, func(t *testing.T) objstore.Store { ... })
//	}
//
// It tests only the interface and the contract in package objstore's doc
// comments; nothing here knows how an adapter stores objects.
package objtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/iotest"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// Options tunes the suite. The zero value gives the defaults.
type Options struct {
	// ListKeys is how many keys the pagination case lists (default 1,100:
	// more than one S3 page of 1,000).
	ListKeys int
	// LargeSize is the size of the large-object case (default 12 MiB: three
	// parts at S3's 5 MiB minimum, so an adapter run with a 5 MiB multipart
	// threshold and part size goes through its multipart path; with -short,
	// 6 MiB: two parts). Negative skips the case.
	LargeSize int64
}

func (o Options) withDefaults() Options {
	if o.ListKeys <= 0 {
		o.ListKeys = 1100
	}
	if o.LargeSize == 0 {
		o.LargeSize = 12 << 20
		if testing.Short() {
			o.LargeSize = 6 << 20
		}
	}
	return o
}

// Run runs the suite with default options as subtests of t. newStore is
// called once per subtest and must return an empty store; it should
// arrange any cleanup with t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) objstore.Store) {
	RunWith(t, Options{}, newStore)
}

// RunWith runs the suite with o.
func RunWith(t *testing.T, o Options, newStore func(t *testing.T) objstore.Store) {
	o = o.withDefaults()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, newStore(t), o)
		})
	}
}

type testCase struct {
	name string
	fn   func(t *testing.T, s objstore.Store, o Options)
}

var cases = []testCase{
	{"Put/RoundTrip", testPutRoundTrip},
	{"Put/Overwrite", testPutOverwrite},
	{"Put/ZeroBytes", testPutZeroBytes},
	{"Put/SlashKeys", testPutSlashKeys},
	{"Put/ShortBody", testPutShortBody},
	{"Put/LongBody", testPutLongBody},
	{"Put/ReaderShapes", testPutReaderShapes},
	{"Put/ReaderError", testPutReaderError},
	{"Put/CallerReusesBuffer", testPutBufferReuse},
	{"Put/NegativeSize", testPutNegativeSize},
	{"InvalidKeys", testInvalidKeys},
	{"Get/Ranges", testGetRanges},
	{"Get/EmptyObject", testGetEmptyObject},
	{"Get/NotFound", testGetNotFound},
	{"Get/CallerOwnsSlice", testGetCallerOwnsSlice},
	{"Head", testHead},
	{"Head/NotFound", testHeadNotFound},
	{"PutIfAbsent/Absent", testPutIfAbsentAbsent},
	{"PutIfAbsent/Exists", testPutIfAbsentExists},
	{"PutIfAbsent/ZeroBytes", testPutIfAbsentZeroBytes},
	{"PutIfAbsent/AfterDelete", testPutIfAbsentAfterDelete},
	{"PutIfAbsent/Race", testPutIfAbsentRace},
	{"Delete/Removes", testDeleteRemoves},
	{"Delete/Missing", testDeleteMissing},
	{"List/Empty", testListEmpty},
	{"List/Prefix", testListPrefix},
	{"List/Order", testListOrder},
	{"List/ImpossiblePrefix", testListImpossiblePrefix},
	{"List/Pagination", testListPagination},
	{"Large", testLarge},
	{"Large/ShortBody", testLargeShortBody},
	{"Concurrent/WholeObjects", testConcurrentWholeObjects},
	{"Context/Cancelled", testContextCancelled},
}

// data returns n deterministic bytes that differ by seed.
func data(n int, seed uint64) []byte {
	r := rand.New(rand.NewPCG(seed, uint64(n)))
	b := make([]byte, n)
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			b[i+j] = byte(v >> (8 * j))
		}
	}
	return b
}

func put(t *testing.T, s objstore.Store, key string, b []byte) {
	t.Helper()
	if err := s.Put(t.Context(), key, bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("Put(%q, %d bytes): %v", key, len(b), err)
	}
}

func get(t *testing.T, s objstore.Store, key string) []byte {
	t.Helper()
	b, err := s.Get(t.Context(), key, 0, -1)
	if err != nil {
		t.Fatalf("Get(%q, 0, -1): %v", key, err)
	}
	return b
}

func wantBytes(t *testing.T, what string, got, want []byte) {
	t.Helper()
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: got %d bytes %s, want %d bytes %s", what, len(got), head(got), len(want), head(want))
	}
}

func head(b []byte) string {
	if len(b) > 16 {
		return fmt.Sprintf("%x…", b[:16])
	}
	return fmt.Sprintf("%x", b)
}

func wantErr(t *testing.T, what string, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("%s: got error %v, want %v", what, err, target)
	}
}

func wantMissing(t *testing.T, s objstore.Store, key string) {
	t.Helper()
	_, err := s.Head(t.Context(), key)
	wantErr(t, "Head("+key+")", err, objstore.ErrNotFound)
	_, err = s.Get(t.Context(), key, 0, -1)
	wantErr(t, "Get("+key+")", err, objstore.ErrNotFound)
}

func keys(infos []objstore.Info) []string {
	ks := make([]string, len(infos))
	for i, in := range infos {
		ks[i] = in.Key
	}
	return ks
}

func list(t *testing.T, s objstore.Store, prefix string) []objstore.Info {
	t.Helper()
	infos, err := s.List(t.Context(), prefix)
	if err != nil {
		t.Fatalf("List(%q): %v", prefix, err)
	}
	return infos
}

func testPutRoundTrip(t *testing.T, s objstore.Store, _ Options) {
	want := data(1000, 1)
	put(t, s, "k", want)
	wantBytes(t, "Get", get(t, s, "k"), want)
}

func testPutOverwrite(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "k", data(1000, 1))
	put(t, s, "k", data(10, 2))
	wantBytes(t, "after shrinking overwrite", get(t, s, "k"), data(10, 2))
	put(t, s, "k", data(3000, 3))
	wantBytes(t, "after growing overwrite", get(t, s, "k"), data(3000, 3))
	if infos := list(t, s, ""); len(infos) != 1 || infos[0].Size != 3000 {
		t.Fatalf("List after overwrites = %v, want one object of 3000 bytes", infos)
	}
}

func testPutZeroBytes(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "empty", nil)
	if err := s.Put(t.Context(), "empty2", nil, 0); err != nil {
		t.Fatalf("Put(nil body, 0): %v", err)
	}
	for _, k := range []string{"empty", "empty2"} {
		if b := get(t, s, k); len(b) != 0 {
			t.Fatalf("Get(%q) = %d bytes, want 0", k, len(b))
		}
		info, err := s.Head(t.Context(), k)
		if err != nil || info != (objstore.Info{Key: k, Size: 0}) {
			t.Fatalf("Head(%q) = %+v, %v; want size 0", k, info, err)
		}
	}
}

func testPutSlashKeys(t *testing.T, s objstore.Store, _ Options) {
	ks := []string{
		"tierlog/orders/0/00000000000000000000.seg",
		"tierlog/orders/0/00000000000000001000.seg",
		"tierlog/orders/1/00000000000000000000.seg",
		"3fa1/orders/p0007/00000000000000123456.seg",
		"a b/c-d_e.f/ü/~!@#$%^&()+=,;'[]{}",
	}
	for i, k := range ks {
		put(t, s, k, data(100+i, uint64(i)))
	}
	for i, k := range ks {
		wantBytes(t, "Get("+k+")", get(t, s, k), data(100+i, uint64(i)))
	}
	got := keys(list(t, s, ""))
	want := slices.Sorted(slices.Values(ks))
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

func testPutShortBody(t *testing.T, s objstore.Store, _ Options) {
	err := s.Put(t.Context(), "k", bytes.NewReader(data(10, 1)), 11)
	if err == nil {
		t.Fatal("Put with a body shorter than size succeeded")
	}
	wantMissing(t, s, "k")
	if err := s.PutIfAbsent(t.Context(), "k", bytes.NewReader(data(10, 1)), 11); err == nil {
		t.Fatal("PutIfAbsent with a body shorter than size succeeded")
	}
	wantMissing(t, s, "k")

	// A failed overwrite leaves the old object whole.
	put(t, s, "k", data(50, 2))
	if err := s.Put(t.Context(), "k", bytes.NewReader(data(10, 3)), 20); err == nil {
		t.Fatal("overwriting Put with a short body succeeded")
	}
	wantBytes(t, "after failed overwrite", get(t, s, "k"), data(50, 2))
}

func testPutLongBody(t *testing.T, s objstore.Store, _ Options) {
	b := data(100, 1)
	put := func(key string, fn func(context.Context, string, io.Reader, int64) error) {
		if err := fn(t.Context(), key, bytes.NewReader(b), 60); err != nil {
			t.Fatalf("%s with a longer body: %v", key, err)
		}
		wantBytes(t, "Get("+key+")", get(t, s, key), b[:60])
	}
	put("put", s.Put)
	put("put-if-absent", s.PutIfAbsent)
}

func testPutReaderShapes(t *testing.T, s objstore.Store, _ Options) {
	b := data(5000, 1)
	shapes := []struct {
		name string
		r    func(io.Reader) io.Reader
	}{
		{"OneByte", iotest.OneByteReader},
		{"Half", iotest.HalfReader},
		{"DataErr", iotest.DataErrReader},
	}
	for _, sh := range shapes {
		k := "put/" + sh.name
		if err := s.Put(t.Context(), k, sh.r(bytes.NewReader(b)), int64(len(b))); err != nil {
			t.Fatalf("Put through %s reader: %v", sh.name, err)
		}
		wantBytes(t, "Get("+k+")", get(t, s, k), b)
		k = "put-if-absent/" + sh.name
		if err := s.PutIfAbsent(t.Context(), k, sh.r(bytes.NewReader(b)), int64(len(b))); err != nil {
			t.Fatalf("PutIfAbsent through %s reader: %v", sh.name, err)
		}
		wantBytes(t, "Get("+k+")", get(t, s, k), b)
	}
}

var errReader = errors.New("objtest: reader failed")

func testPutReaderError(t *testing.T, s objstore.Store, _ Options) {
	body := func() io.Reader {
		return io.MultiReader(bytes.NewReader(data(100, 1)), iotest.ErrReader(errReader))
	}
	if err := s.Put(t.Context(), "k", body(), 200); !errors.Is(err, errReader) {
		t.Fatalf("Put with a failing reader: got %v, want it to wrap the reader's error", err)
	}
	if err := s.PutIfAbsent(t.Context(), "k", body(), 200); !errors.Is(err, errReader) {
		t.Fatalf("PutIfAbsent with a failing reader: got %v, want it to wrap the reader's error", err)
	}
	wantMissing(t, s, "k")
}

func testPutBufferReuse(t *testing.T, s objstore.Store, _ Options) {
	b := data(100, 1)
	want := slices.Clone(b)
	put(t, s, "k", b)
	clear(b)
	wantBytes(t, "Get after caller cleared its buffer", get(t, s, "k"), want)
}

func testPutNegativeSize(t *testing.T, s objstore.Store, _ Options) {
	if err := s.Put(t.Context(), "k", bytes.NewReader(nil), -1); err == nil {
		t.Fatal("Put with size -1 succeeded")
	}
	if err := s.PutIfAbsent(t.Context(), "k", bytes.NewReader(nil), -1); err == nil {
		t.Fatal("PutIfAbsent with size -1 succeeded")
	}
	wantMissing(t, s, "k")
}

// BadKeys are keys every adapter must refuse with objstore.ErrInvalidKey.
var BadKeys = []string{
	"", "/", "/a", "a/", "a//b", ".", "..", "../a", "a/..", "a/../b", "a/./b", "./a",
	"a\x00b", "\xff\xfe", strings.Repeat("k", objstore.MaxKeyLen+1),
}

func testInvalidKeys(t *testing.T, s objstore.Store, _ Options) {
	ctx := t.Context()
	for _, k := range BadKeys {
		name := fmt.Sprintf("%.40q", k)
		wantErr(t, "Put("+name+")", s.Put(ctx, k, bytes.NewReader([]byte("x")), 1), objstore.ErrInvalidKey)
		wantErr(t, "PutIfAbsent("+name+")", s.PutIfAbsent(ctx, k, bytes.NewReader([]byte("x")), 1), objstore.ErrInvalidKey)
		_, err := s.Get(ctx, k, 0, -1)
		wantErr(t, "Get("+name+")", err, objstore.ErrInvalidKey)
		_, err = s.Head(ctx, k)
		wantErr(t, "Head("+name+")", err, objstore.ErrInvalidKey)
		wantErr(t, "Delete("+name+")", s.Delete(ctx, k), objstore.ErrInvalidKey)
	}
	if infos := list(t, s, ""); len(infos) != 0 {
		t.Fatalf("List after refused puts = %v, want none", infos)
	}
	// The longest valid key works.
	long := strings.Repeat("k", objstore.MaxKeyLen)
	if err := objstore.CheckKey(long); err != nil {
		t.Fatalf("CheckKey(%d bytes): %v", len(long), err)
	}
}

func testGetRanges(t *testing.T, s objstore.Store, _ Options) {
	const size = 1000
	b := data(size, 7)
	put(t, s, "k", b)
	ok := []struct{ off, n int64 }{
		{0, -1}, {0, size}, {0, 1}, {0, 100}, // start
		{400, 200}, {1, size - 2}, {500, -1}, // middle
		{size - 1, 1}, {size - 100, 100}, {size - 100, -1}, {size - 1, -1}, // end
		{size, 0}, {size, -1}, {0, 0}, {500, 0}, // empty reads
	}
	for _, c := range ok {
		got, err := s.Get(t.Context(), "k", c.off, c.n)
		if err != nil {
			t.Fatalf("Get(off %d, n %d): %v", c.off, c.n, err)
		}
		end := int64(size)
		if c.n >= 0 {
			end = c.off + c.n
		}
		wantBytes(t, fmt.Sprintf("Get(off %d, n %d)", c.off, c.n), got, b[c.off:end])
	}
	bad := []struct{ off, n int64 }{
		{size + 1, -1}, {size + 1, 0}, {size + 100, 10}, // off past the end
		{size, 1}, {size - 1, 2}, {0, size + 1}, {900, 200}, // runs past the end
		{-1, 1}, {-1, -1}, // negative off
		{1, 1<<63 - 1}, // off+n overflows
	}
	for _, c := range bad {
		got, err := s.Get(t.Context(), "k", c.off, c.n)
		if !errors.Is(err, objstore.ErrRange) {
			t.Fatalf("Get(off %d, n %d) = %d bytes, %v; want ErrRange", c.off, c.n, len(got), err)
		}
	}
}

func testGetEmptyObject(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "e", nil)
	for _, c := range []struct{ off, n int64 }{{0, -1}, {0, 0}} {
		got, err := s.Get(t.Context(), "e", c.off, c.n)
		if err != nil || len(got) != 0 {
			t.Fatalf("Get(empty, off %d, n %d) = %d bytes, %v; want 0 bytes", c.off, c.n, len(got), err)
		}
	}
	for _, c := range []struct{ off, n int64 }{{0, 1}, {1, -1}, {1, 0}} {
		_, err := s.Get(t.Context(), "e", c.off, c.n)
		wantErr(t, fmt.Sprintf("Get(empty, off %d, n %d)", c.off, c.n), err, objstore.ErrRange)
	}
}

func testGetNotFound(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "a/b", data(10, 1))
	for _, k := range []string{"missing", "a", "a/b/c", "a/bb", "a/c"} {
		for _, c := range []struct{ off, n int64 }{{0, -1}, {0, 1}, {5, 2}, {0, 0}, {100, -1}} {
			_, err := s.Get(t.Context(), k, c.off, c.n)
			wantErr(t, fmt.Sprintf("Get(%q, off %d, n %d)", k, c.off, c.n), err, objstore.ErrNotFound)
		}
	}
}

func testGetCallerOwnsSlice(t *testing.T, s objstore.Store, _ Options) {
	want := data(100, 1)
	put(t, s, "k", want)
	got := get(t, s, "k")
	clear(got)
	part, err := s.Get(t.Context(), "k", 10, 10)
	if err != nil {
		t.Fatal(err)
	}
	clear(part)
	wantBytes(t, "Get after caller cleared earlier results", get(t, s, "k"), want)
}

func testHead(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "x/y", data(1234, 1))
	info, err := s.Head(t.Context(), "x/y")
	if err != nil || info != (objstore.Info{Key: "x/y", Size: 1234}) {
		t.Fatalf("Head = %+v, %v; want {x/y 1234}", info, err)
	}
}

func testHeadNotFound(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "x/y", data(10, 1))
	for _, k := range []string{"missing", "x", "x/y/z", "x/yy"} {
		_, err := s.Head(t.Context(), k)
		wantErr(t, "Head("+k+")", err, objstore.ErrNotFound)
	}
}

func testPutIfAbsentAbsent(t *testing.T, s objstore.Store, _ Options) {
	b := data(300, 1)
	if err := s.PutIfAbsent(t.Context(), "a/k", bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	wantBytes(t, "Get", get(t, s, "a/k"), b)
}

func testPutIfAbsentExists(t *testing.T, s objstore.Store, _ Options) {
	first := data(300, 1)
	put(t, s, "k", first)
	second := data(200, 2)
	err := s.PutIfAbsent(t.Context(), "k", bytes.NewReader(second), int64(len(second)))
	wantErr(t, "PutIfAbsent over Put", err, objstore.ErrExists)
	wantBytes(t, "Get after refused PutIfAbsent", get(t, s, "k"), first)

	if err := s.PutIfAbsent(t.Context(), "k2", bytes.NewReader(first), int64(len(first))); err != nil {
		t.Fatal(err)
	}
	err = s.PutIfAbsent(t.Context(), "k2", bytes.NewReader(first), int64(len(first)))
	wantErr(t, "PutIfAbsent twice, same bytes", err, objstore.ErrExists)
	// An empty object exists too.
	put(t, s, "e", nil)
	err = s.PutIfAbsent(t.Context(), "e", bytes.NewReader(second), int64(len(second)))
	wantErr(t, "PutIfAbsent over an empty object", err, objstore.ErrExists)
	if b := get(t, s, "e"); len(b) != 0 {
		t.Fatalf("empty object became %d bytes", len(b))
	}
}

func testPutIfAbsentZeroBytes(t *testing.T, s objstore.Store, _ Options) {
	if err := s.PutIfAbsent(t.Context(), "e", bytes.NewReader(nil), 0); err != nil {
		t.Fatal(err)
	}
	err := s.PutIfAbsent(t.Context(), "e", bytes.NewReader(nil), 0)
	wantErr(t, "second PutIfAbsent of an empty object", err, objstore.ErrExists)
}

func testPutIfAbsentAfterDelete(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "k", data(10, 1))
	if err := s.Delete(t.Context(), "k"); err != nil {
		t.Fatal(err)
	}
	b := data(20, 2)
	if err := s.PutIfAbsent(t.Context(), "k", bytes.NewReader(b), int64(len(b))); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	wantBytes(t, "Get", get(t, s, "k"), b)
}

func testPutIfAbsentRace(t *testing.T, s objstore.Store, _ Options) {
	const writers = 8
	for round := range 5 {
		key := fmt.Sprintf("race/%d", round)
		start := make(chan struct{})
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for w := range writers {
			wg.Go(func() {
				b := data(1000+w, uint64(w))
				<-start
				errs[w] = s.PutIfAbsent(t.Context(), key, bytes.NewReader(b), int64(len(b)))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for w, err := range errs {
			switch {
			case err == nil:
				if winner >= 0 {
					t.Fatalf("round %d: writers %d and %d both succeeded", round, winner, w)
				}
				winner = w
			case !errors.Is(err, objstore.ErrExists):
				t.Fatalf("round %d: writer %d: %v, want nil or ErrExists", round, w, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer succeeded", round)
		}
		wantBytes(t, fmt.Sprintf("round %d: the winner's bytes", round), get(t, s, key), data(1000+winner, uint64(winner)))
	}
}

func testDeleteRemoves(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "d/a", data(10, 1))
	put(t, s, "d/b", data(10, 2))
	if err := s.Delete(t.Context(), "d/a"); err != nil {
		t.Fatal(err)
	}
	wantMissing(t, s, "d/a")
	if got := keys(list(t, s, "d/")); !slices.Equal(got, []string{"d/b"}) {
		t.Fatalf("List after Delete = %q, want [d/b]", got)
	}
	wantBytes(t, "the other object", get(t, s, "d/b"), data(10, 2))
	if err := s.Delete(t.Context(), "d/a"); err != nil {
		t.Fatalf("second Delete: %v", err)
	}
}

func testDeleteMissing(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "x/y", data(10, 1))
	for _, k := range []string{"never", "x", "x/y/z", "x/yy", "q/r/s"} {
		if err := s.Delete(t.Context(), k); err != nil {
			t.Fatalf("Delete(%q) of a missing key: %v", k, err)
		}
	}
	wantBytes(t, "untouched object", get(t, s, "x/y"), data(10, 1))
}

func testListEmpty(t *testing.T, s objstore.Store, _ Options) {
	for _, p := range []string{"", "a", "a/"} {
		if infos := list(t, s, p); len(infos) != 0 {
			t.Fatalf("List(%q) of an empty store = %v", p, infos)
		}
	}
}

func testListPrefix(t *testing.T, s objstore.Store, _ Options) {
	objs := map[string]int{
		"p/a1": 1, "p/a10": 2, "p/a2/x": 3, "p/a2/y/z": 4, "p/b": 5, "pa": 6, "q/a1": 7, "p2/a": 8,
	}
	for k, n := range objs {
		put(t, s, k, data(n, uint64(n)))
	}
	cases := []struct {
		prefix string
		want   []string
	}{
		{"", []string{"p/a1", "p/a10", "p/a2/x", "p/a2/y/z", "p/b", "p2/a", "pa", "q/a1"}},
		{"p", []string{"p/a1", "p/a10", "p/a2/x", "p/a2/y/z", "p/b", "p2/a", "pa"}},
		{"p/", []string{"p/a1", "p/a10", "p/a2/x", "p/a2/y/z", "p/b"}},
		{"p/a", []string{"p/a1", "p/a10", "p/a2/x", "p/a2/y/z"}},
		{"p/a1", []string{"p/a1", "p/a10"}},
		{"p/a2/", []string{"p/a2/x", "p/a2/y/z"}},
		{"p/a2/y", []string{"p/a2/y/z"}},
		{"p/a2/y/z", []string{"p/a2/y/z"}},
		{"p/a2/y/z/", nil},
		{"p/c", nil},
		{"r", nil},
		{"p/a1/", nil},
	}
	for _, c := range cases {
		infos := list(t, s, c.prefix)
		if got := keys(infos); !slices.Equal(got, c.want) {
			t.Fatalf("List(%q) = %q, want %q", c.prefix, got, c.want)
		}
		for _, in := range infos {
			if in.Size != int64(objs[in.Key]) {
				t.Fatalf("List(%q): %s size %d, want %d", c.prefix, in.Key, in.Size, objs[in.Key])
			}
		}
	}
}

func testListOrder(t *testing.T, s objstore.Store, _ Options) {
	// '.' (0x2e) and '-' sort before '/' (0x2f), '0' and 'A' after: a
	// directory walk in name order gets this wrong.
	ks := []string{"o/a/b", "o/a.b", "o/a-b", "o/a0", "o/aA", "o/a/a", "o/é", "o/z", "o/A"}
	for i, k := range ks {
		put(t, s, k, data(i, uint64(i)))
	}
	got := keys(list(t, s, "o/"))
	want := slices.Sorted(slices.Values(ks))
	if !slices.Equal(got, want) {
		t.Fatalf("List order = %q, want %q", got, want)
	}
}

func testListImpossiblePrefix(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "a/b", data(1, 1))
	for _, p := range []string{"a//", "/a", "../", "a/../", "./a", "a\x00", "//"} {
		infos, err := s.List(t.Context(), p)
		if err != nil || len(infos) != 0 {
			t.Fatalf("List(%q) = %v, %v; want nothing and no error", p, infos, err)
		}
	}
}

func testListPagination(t *testing.T, s objstore.Store, o Options) {
	n := o.ListKeys
	ks := make([]string, n)
	for i := range ks {
		ks[i] = fmt.Sprintf("many/%020d.seg", i*7919%n) // written out of order
	}
	putAll(t, s, ks, func(i int) []byte { return []byte(ks[i]) })
	put(t, s, "manz", nil) // sorts right after the prefix; must not appear
	infos := list(t, s, "many/")
	if len(infos) != n {
		t.Fatalf("List returned %d keys, want %d", len(infos), n)
	}
	for i, in := range infos {
		want := fmt.Sprintf("many/%020d.seg", i)
		if in.Key != want || in.Size != int64(len(want)) {
			t.Fatalf("List[%d] = %+v, want {%s %d}", i, in, want, len(want))
		}
	}
	if all := list(t, s, ""); len(all) != n+1 {
		t.Fatalf("List(\"\") returned %d keys, want %d", len(all), n+1)
	}
}

// putAll puts ks concurrently, body(i) under ks[i].
func putAll(t *testing.T, s objstore.Store, ks []string, body func(i int) []byte) {
	t.Helper()
	const workers = 8
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ks); i += workers {
				b := body(i)
				if err := s.Put(t.Context(), ks[i], bytes.NewReader(b), int64(len(b))); err != nil {
					errs <- fmt.Errorf("Put(%q): %w", ks[i], err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

func testLarge(t *testing.T, s objstore.Store, o Options) {
	if o.LargeSize < 0 {
		t.Skip("large objects disabled")
	}
	size := o.LargeSize
	b := data(int(size), 42)
	put(t, s, "big/1", b)
	info, err := s.Head(t.Context(), "big/1")
	if err != nil || info.Size != size {
		t.Fatalf("Head = %+v, %v; want size %d", info, err, size)
	}
	wantBytes(t, "whole large object", get(t, s, "big/1"), b)
	const mib = 1 << 20
	for _, c := range []struct{ off, n int64 }{
		{0, 10}, {5*mib - 3, 6}, {5*mib - 1, 5*mib + 2}, {size - 1, 1}, {size - 100, -1}, {size / 2, 1000},
	} {
		if c.off < 0 || c.off+max(c.n, 0) > size {
			continue
		}
		got, err := s.Get(t.Context(), "big/1", c.off, c.n)
		if err != nil {
			t.Fatalf("Get(off %d, n %d): %v", c.off, c.n, err)
		}
		end := size
		if c.n >= 0 {
			end = c.off + c.n
		}
		wantBytes(t, fmt.Sprintf("Get(off %d, n %d)", c.off, c.n), got, b[c.off:end])
	}
	_, err = s.Get(t.Context(), "big/1", size-10, 11)
	wantErr(t, "Get past the end of a large object", err, objstore.ErrRange)

	// Overwrite with another large object.
	b2 := data(int(size)+1, 43)
	put(t, s, "big/1", b2)
	wantBytes(t, "overwritten large object", get(t, s, "big/1"), b2)

	// PutIfAbsent of a large object, then again.
	if err := s.PutIfAbsent(t.Context(), "big/2", bytes.NewReader(b), size); err != nil {
		t.Fatalf("PutIfAbsent(large): %v", err)
	}
	wantBytes(t, "PutIfAbsent'd large object", get(t, s, "big/2"), b)
	err = s.PutIfAbsent(t.Context(), "big/2", bytes.NewReader(b2), int64(len(b2)))
	wantErr(t, "second PutIfAbsent(large)", err, objstore.ErrExists)
	wantBytes(t, "large object after refused PutIfAbsent", get(t, s, "big/2"), b)
}

func testLargeShortBody(t *testing.T, s objstore.Store, o Options) {
	if o.LargeSize < 0 {
		t.Skip("large objects disabled")
	}
	size := o.LargeSize
	b := data(int(size)-1, 5)
	if err := s.Put(t.Context(), "big", bytes.NewReader(b), size); err == nil {
		t.Fatal("Put of a large object with a short body succeeded")
	}
	wantMissing(t, s, "big")
	if err := s.PutIfAbsent(t.Context(), "big", bytes.NewReader(b), size); err == nil {
		t.Fatal("PutIfAbsent of a large object with a short body succeeded")
	}
	wantMissing(t, s, "big")
	if infos := list(t, s, ""); len(infos) != 0 {
		t.Fatalf("List after failed large puts = %v", infos)
	}
}

// testConcurrentWholeObjects overwrites one key while others read it: a
// reader sees one whole version, never a mix, and every version's size.
func testConcurrentWholeObjects(t *testing.T, s objstore.Store, _ Options) {
	const versions = 6
	version := func(v int) []byte { return bytes.Repeat([]byte{byte('a' + v)}, 1000+100*v) }
	put(t, s, "shared", version(0))
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	wg.Go(func() {
		for i := range 30 {
			b := version(i % versions)
			if err := s.Put(t.Context(), "shared", bytes.NewReader(b), int64(len(b))); err != nil {
				errs <- err
				return
			}
		}
	})
	for r := range 4 {
		wg.Go(func() {
			for range 30 {
				b, err := s.Get(t.Context(), "shared", 0, -1)
				if err != nil {
					errs <- fmt.Errorf("reader %d: %w", r, err)
					return
				}
				v := int(b[0] - 'a')
				if v < 0 || v >= versions || !bytes.Equal(b, version(v)) {
					errs <- fmt.Errorf("reader %d: read a torn object of %d bytes starting %q", r, len(b), b[:1])
					return
				}
				if _, err := s.List(t.Context(), "sh"); err != nil {
					errs <- fmt.Errorf("reader %d: List: %w", r, err)
					return
				}
			}
		})
	}
	// Writers of distinct keys alongside.
	for w := range 3 {
		wg.Go(func() {
			for i := range 10 {
				k := fmt.Sprintf("w%d/%d", w, i)
				b := data(100, uint64(w*100+i))
				if err := s.Put(t.Context(), k, bytes.NewReader(b), int64(len(b))); err != nil {
					errs <- err
					return
				}
				if i%2 == 0 {
					if err := s.Delete(t.Context(), k); err != nil {
						errs <- err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := len(list(t, s, "w")); got != 15 {
		t.Fatalf("List(w) = %d keys, want 15", got)
	}
}

func testContextCancelled(t *testing.T, s objstore.Store, _ Options) {
	put(t, s, "k", data(10, 1))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	check := func(what string, err error) {
		t.Helper()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("%s with a cancelled context: got %v, want context.Canceled", what, err)
		}
	}
	check("Put", s.Put(ctx, "new", bytes.NewReader(data(10, 2)), 10))
	check("PutIfAbsent", s.PutIfAbsent(ctx, "new2", bytes.NewReader(data(10, 2)), 10))
	_, err := s.Get(ctx, "k", 0, -1)
	check("Get", err)
	_, err = s.Head(ctx, "k")
	check("Head", err)
	_, err = s.List(ctx, "")
	check("List", err)
	check("Delete", s.Delete(ctx, "k"))
}
