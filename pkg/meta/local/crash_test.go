package local

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tierlog/tierlog/pkg/meta"
)

// The crash test re-executes the test binary as a child that mutates a
// store as fast as it can, printing "ack <n>" after each mutation returns.
// The parent SIGKILLs it mid-run, reopens the store and checks it holds
// exactly the acknowledged mutations, plus possibly the one in flight.
//
// A SIGKILL keeps the page cache, so this proves process-crash safety (no
// acknowledged mutation is lost, a kill mid-write never prevents reopening,
// rotation is crash-safe). Power loss is covered by the fsync discipline and
// by TestTornTail/TestDamage, which build the on-disk states it can leave.

const crashDirEnv = "TIERLOG_META_CRASH_DIR"

var crashKey = meta.PartitionKey{Topic: "orders", TopicID: "id-1", Partition: 0}

const crashTTL = time.Hour

// crashOp performs mutation n of the child's deterministic sequence.
func crashOp(ctx context.Context, s *Store, acq meta.Partition, n int) error {
	switch n % 10 {
	case 9:
		return s.CreateTopic(ctx, meta.TopicConfig{Name: fmt.Sprintf("t%06d", n), ID: strconv.Itoa(n)})
	case 4:
		return s.CommitOffsets(ctx, "g", []meta.GroupOffset{{Topic: "orders", Partition: n % 3, Offset: int64(n)}})
	default:
		return s.Commit(ctx, crashCommit(acq, n), false, t0, crashTTL)
	}
}

// crashCommit is the state mutation n (a commit) writes: the holder carries
// the version forward, one per commit before it.
func crashCommit(acq meta.Partition, n int) meta.Partition {
	p := committed(acq, int64(n), n/50%20)
	before := 8*(n/10) + n%10 // ops 4 and 9 of each ten are not commits
	if n%10 > 4 {
		before--
	}
	p.Version += uint64(before)
	return p
}

// crashModel is what the store must hold after the first n mutations.
type crashModel struct {
	Part    meta.Partition
	Topics  []string
	Offsets []meta.GroupOffset
}

func expectAfter(acq meta.Partition, n int) crashModel {
	m := crashModel{Part: clonePartition(acq), Offsets: []meta.GroupOffset{}}
	offs := map[int]int64{}
	for i := range n {
		switch i % 10 {
		case 9:
			m.Topics = append(m.Topics, fmt.Sprintf("t%06d", i))
		case 4:
			offs[i%3] = int64(i)
		default:
			m.Part = clonePartition(crashCommit(acq, i))
			m.Part.Version++ // the version the commit left
		}
	}
	for p := range 3 {
		if o, ok := offs[p]; ok {
			m.Offsets = append(m.Offsets, meta.GroupOffset{Topic: "orders", Partition: p, Offset: o})
		}
	}
	return m
}

func observe(t *testing.T, s *Store) crashModel {
	ctx := context.Background()
	var m crashModel
	var err error
	m.Part, err = s.Partition(ctx, crashKey)
	must(t, err)
	m.Part.LeaseUntil = 0 // compared separately
	ts, err := s.Topics(ctx)
	must(t, err)
	for _, tc := range ts {
		m.Topics = append(m.Topics, tc.Name)
	}
	m.Offsets, err = s.GroupOffsets(ctx, "g", "orders")
	must(t, err)
	return m
}

// TestCrashChild is the child; it is skipped unless run by TestCrash.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashDirEnv)
	if dir == "" {
		t.Skip("helper process for TestCrash")
	}
	s, err := Open(dir, WithSnapshotBytes(16<<10))
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	ctx := context.Background()
	a, err := s.Acquire(ctx, crashKey, "crash", t0, crashTTL)
	if err != nil {
		fmt.Printf("error %v\n", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	deadline := time.Now().Add(20 * time.Second)
	for n := 0; time.Now().Before(deadline); n++ {
		if err := crashOp(ctx, s, a.Partition, n); err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(2)
		}
		fmt.Printf("ack %d\n", n) // unbuffered: one write(2) per ack
	}
	os.Exit(3) // the parent should have killed us long ago
}

func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the test binary as child processes: skipped with -short (make unit); make test runs it")
	}
	for _, killAfter := range []int{1, 37, 400, 1500} {
		t.Run(fmt.Sprintf("kill_after_%d", killAfter), func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), crashDirEnv+"="+dir)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.StdoutPipe()
			must(t, err)
			must(t, cmd.Start())
			acked, killed := -1, false
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := sc.Text()
				if rest, ok := strings.CutPrefix(line, "ack "); ok {
					n, err := strconv.Atoi(rest)
					if err != nil || n != acked+1 {
						t.Fatalf("bad ack line %q after %d", line, acked)
					}
					acked = n
				} else if strings.HasPrefix(line, "error") {
					t.Fatalf("child: %s", line)
				}
				if !killed && acked+1 >= killAfter {
					must(t, cmd.Process.Kill()) // SIGKILL
					killed = true
				}
			}
			err = cmd.Wait()
			if !killed {
				t.Fatalf("child exited before the kill: %v\n%s", err, stderr.String())
			}
			// Acks already in the pipe at the kill count too: read to EOF.
			s := openT(t, dir)
			got := observe(t, s)
			acq := meta.Partition{Topic: crashKey.Topic, TopicID: crashKey.TopicID, Epoch: 1, Version: 1, Owner: "crash", LastTS: -1}
			okWith := func(n int) bool {
				want := expectAfter(acq, n)
				return reflect.DeepEqual(norm(got), norm(want))
			}
			if !okWith(acked+1) && !okWith(acked+2) {
				t.Fatalf("after %d acked mutations the store holds\n %+v\nwant the state after %d or %d:\n %+v",
					acked+1, got, acked+1, acked+2, expectAfter(acq, acked+1))
			}
			p, err := s.Partition(context.Background(), crashKey)
			must(t, err)
			if p.LeaseUntil != t0.Add(crashTTL).UnixMilli() {
				t.Fatalf("lease until %d", p.LeaseUntil)
			}
			t.Logf("killed after %d acks; journals %v", acked+1, dirNames(dir))
		})
	}
}

func norm(m crashModel) crashModel {
	m.Part.LeaseUntil = 0
	if len(m.Offsets) == 0 {
		m.Offsets = nil
	}
	return m
}

func dirNames(dir string) []string {
	des, _ := os.ReadDir(dir)
	var out []string
	for _, de := range des {
		out = append(out, de.Name())
	}
	return out
}
