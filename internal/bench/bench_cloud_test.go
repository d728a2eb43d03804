package bench

import (
	"context"
	"maps"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/internal/testenv"
	"github.com/tierlog/tierlog/pkg/segment"
)

// TestParseStrace: hot-dir calls are counted by name, directory fds apart,
// split calls once, other paths and the poller's calls not at all, and
// ReadAt's second pread64 after a short read apart.
func TestParseStrace(t *testing.T) {
	out := `100 openat(AT_FDCWD</w>, "/hot/t/0/a.log", O_RDWR|O_CLOEXEC) = 11</hot/t/0/a.log>
100 epoll_ctl(4<anon_inode:[eventpoll]>, EPOLL_CTL_ADD, 11</hot/t/0/a.log>, {events=EPOLLIN}) = -1 EPERM (Operation not permitted)
100 pread64(11</hot/t/0/a.log>, "abc", 4096, 0) = 3
100 pread64(11</hot/t/0/a.log>, "", 4093, 3) = 0
100 pread64(11</hot/t/0/a.log>, "", 10, 3) = 0
101 pwrite64(11</hot/t/0/a.log>, "x", 1, 3 <unfinished ...>
102 read(8<socket:[1]>, "0123456789", 10) = 10
101 <... pwrite64 resumed>) = 1
100 fsync(11</hot/t/0/a.log>) = 0
100 openat(AT_FDCWD</w>, "/hot/t/0", O_RDONLY|O_CLOEXEC|O_DIRECTORY <unfinished ...>
101 fstat(11</hot/t/0/a.log>, {st_mode=S_IFREG|0644, st_size=4, ...}) = 0
100 <... openat resumed>) = 12</hot/t/0>
100 getdents64(12</hot/t/0>, 0x7f /* 3 entries */, 8192) = 80
100 close(12</hot/t/0>) = 0
100 close(11</hot/t/0/a.log>) = 0
100 openat(AT_FDCWD</w>, "/hot/t/0/wbuf", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = -1 ENOENT (No such file or directory)
100 unlinkat(AT_FDCWD</w>, "/hot/t/0/b", 0) = 0
100 newfstatat(AT_FDCWD</w>, "/hot/t", {st_mode=S_IFDIR|0755, ...}, 0) = 0
100 openat(AT_FDCWD</w>, "/other/x", O_RDONLY|O_CLOEXEC) = 13</other/x>
100 pread64(13</other/x>, "", 5, 0) = 0
`
	got, err := parseStrace(strings.NewReader(out), "/hot")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"openat": 1, "pread64": 3, "pread64(again)": 1, "pwrite64": 1, "fsync": 1, "openat(dir)": 2,
		"fstat": 1, "getdents64(dir)": 1, "close(dir)": 1, "close": 1, "unlinkat": 1, "newfstatat": 1}
	if !maps.Equal(got, want) {
		t.Errorf("parseStrace:\n got %v\nwant %v", got, want)
	}
	wantOps := map[string]int64{"open": 1, "read": 2, "write": 1, "sync": 1, "fstat": 1, "close": 1, "readdir": 2, "stat": 1, "remove": 1}
	if ops := straceOps(got); !maps.Equal(ops, wantOps) {
		t.Errorf("straceOps:\n got %v\nwant %v", ops, wantOps)
	}
}

func TestParseCells(t *testing.T) {
	cells, err := ParseCells("1x1, 8x8,16x1")
	if err != nil || len(cells) != 3 || cells[1] != (CellSpec{writers: 8, partitions: 8}) || cells[2] != (CellSpec{writers: 16, partitions: 1}) {
		t.Errorf("ParseCells: %v %v", cells, err)
	}
	for _, bad := range []string{"", "8", "2x3", "0x1", "1x0", "x1", "300x1"} {
		if _, err := ParseCells(bad); err == nil {
			t.Errorf("ParseCells(%q) accepted", bad)
		}
	}
}

// TestBenchCloudCounts runs `tierlog bench cloud` small and checks its
// bookkeeping, not its speed: each cell counted its answers, the single
// writer made 2 DynamoDB writes per produce and durable hot-tier round
// trips, every process's first produce was timed; the tiering step
// finalized the sealed segments with S3 requests; the consumer saw every
// commit; strace (where installed) agrees with the counters but for reads;
// the tables render with their money columns.
func TestBenchCloudCounts(t *testing.T) {
	testenv.SkipShort(t, "dynalite and tierlog serve processes")
	if _, err := dynaliteDir(""); err != nil {
		t.Fatal(err) // CI runs make test-deps: a missing dynalite is a failure
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	p, _ := segment.ParseLatencyProfile("efs-onezone")
	o := CloudOpts{
		ContentionOpts: ContentionOpts{Duration: time.Second, Records: 3, RecordBytes: 20, ServerBin: testenv.TierlogBinary(t),
			Profile: p, Overhead: time.Millisecond},
		Cells: []CellSpec{{writers: 1, partitions: 1}, {writers: 2, partitions: 2}}, Delay: time.Millisecond, MemoryMB: 1024,
		TierSegments: 2, TierSegmentBytes: 32 << 10, TierRecords: 8, TierRecordBytes: 1024,
		ReaderSamples: 3, Rates: []float64{1}, Batches: []int{10}, RecBytes: 1024,
	}
	if _, err := exec.LookPath("strace"); err == nil {
		o.StraceProduces = 5
	}
	res, err := runCloud(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Cells) != 2 {
		t.Fatalf("%d cells, want 2", len(res.Cells))
	}
	for _, c := range res.Cells {
		t.Logf("%d x %d: ok %d of %d; FS %v; round trips %v; DynamoDB %v; first produces %v", c.Writers, c.Partitions,
			c.OK, c.Sent, c.FSByOp, c.RoundTrips, c.DDBByOp, c.FirstProduce)
		if c.OK == 0 || c.OK+c.Unavailable+c.Other != c.Sent {
			t.Errorf("%d x %d: ok %d, 503 %d, other %d of %d sent", c.Writers, c.Partitions, c.OK, c.Unavailable, c.Other, c.Sent)
		}
		if c.RoundTrips["durable"] < c.OK || c.RoundTrips["read"] == 0 || c.Charged == 0 {
			t.Errorf("%d x %d: round trips %v, charged %v; want a durable one per produce at least", c.Writers, c.Partitions, c.RoundTrips, c.Charged)
		}
		if len(c.FirstProduce) != c.Writers || c.FSBytes["written"] < c.OK*60 {
			t.Errorf("%d x %d: first produces %v, bytes %v", c.Writers, c.Partitions, c.FirstProduce, c.FSBytes)
		}
		if c.S3Calls != 0 {
			t.Errorf("%d x %d: %d S3 requests while producing", c.Writers, c.Partitions, c.S3Calls)
		}
		if perM, perGB := res.money(c); perM <= 0 || perGB <= 0 {
			t.Errorf("%d x %d: $%v per M, $%v per GB", c.Writers, c.Partitions, perM, perGB)
		}
	}
	// One writer alone parks its lease after its first rounds (an acquire
	// and a commit each): one UpdateItem a produce from then on.
	if c := res.Cells[0]; c.DDBWrites != c.DDBByOp["UpdateItem"] || c.DDBWrites < c.OK || c.DDBWrites > c.OK+3 {
		t.Errorf("one writer: DynamoDB %v for %d produces, want one UpdateItem each, and an acquire for each of the first three", c.DDBByOp, c.OK)
	}
	if tr := res.Tier; tr == nil || tr.Segments != 2 || tr.S3["put"] < 2 || tr.BytesFinalized < 32<<10 || tr.DDB["PutItem"] == 0 {
		t.Errorf("tiering step: %+v", tr)
	}
	if rd := res.Reader; rd == nil || rd.Samples != 3 || rd.AfterSend.P50 <= 0 {
		t.Errorf("reader step: %+v", rd)
	}
	if s := res.Strace; o.StraceProduces > 0 {
		if s == nil {
			t.Fatal("no strace step")
		}
		for op, v := range s.Counter {
			if op != "read" && s.Derived[op] != v {
				t.Errorf("strace: %s: counter %d, strace %d (counter %v, system calls %v)", op, v, s.Derived[op], s.Counter, s.Syscalls)
			}
		}
	}
	for _, out := range []string{renderCloudText(res), renderCloudMarkdown(res)} {
		if !strings.Contains(out, "$ per M produces") || !strings.Contains(out, "Tiering:") || !strings.Contains(out, "Reader:") || !strings.Contains(out, "$225") {
			t.Errorf("rendered:\n%s", out)
		}
	}
	if rows := res.rateTable(); len(rows) != 1 || rows[0].Bill.Total() <= 0 || rows[0].KinesisOD <= 0 {
		t.Errorf("rate table: %+v", rows)
	}
}
