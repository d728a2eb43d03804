package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// groupConsumer is one `tierlog consume --group` process; it records
// every (partition, offset, value) it prints.
type groupConsumer struct {
	name   string
	cmd    *exec.Cmd
	stderr *bytes.Buffer
	mu     sync.Mutex
	got    []delivery
	notify chan struct{} // a token per printed line
	done   chan error
}

type delivery struct {
	p     int
	off   int64
	value string
}

func startGroupConsumer(t *testing.T, url, name string) *groupConsumer {
	t.Helper()
	cmd := exec.Command(tierlogBinary(t), "consume", "--url", url, "--topic", "orders", "--group", "g", "--follow",
		"--wait", "200ms", "-f", `%p %o %s\n`)
	cmd.Env = cliEnv()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &groupConsumer{name: name, cmd: cmd, stderr: &bytes.Buffer{}, notify: make(chan struct{}, 1<<16), done: make(chan error, 1)}
	cmd.Stderr = c.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan struct{})
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) != 3 {
				continue
			}
			p, _ := strconv.Atoi(f[0])
			off, _ := strconv.ParseInt(f[1], 10, 64)
			c.mu.Lock()
			c.got = append(c.got, delivery{p, off, f[2]})
			c.mu.Unlock()
			select {
			case c.notify <- struct{}{}:
			default:
			}
		}
	}()
	go func() {
		<-lines
		c.done <- cmd.Wait()
	}()
	t.Cleanup(func() { cmd.Process.Kill() })
	return c
}

// waitPrinted waits until c printed n more lines.
func (c *groupConsumer) waitPrinted(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-c.notify:
		case <-time.After(30 * time.Second):
			t.Fatalf("%s printed nothing for 30 s; stderr:\n%s", c.name, c.stderr)
		}
	}
}

func (c *groupConsumer) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-c.done:
		if err != nil {
			t.Fatalf("%s after SIGTERM: %v; stderr:\n%s", c.name, err, c.stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not exit after SIGTERM; stderr:\n%s", c.name, c.stderr)
	}
}

func (c *groupConsumer) deliveries() []delivery {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.got)
}

// TestGroupRebalanceProcesses: three `tierlog consume --group` processes
// join and leave one group on a 6-partition topic while a producer writes.
// Every acknowledged record is delivered; a record is delivered twice only
// on a partition that moved between consumers, inside the window between
// the new owner's start (the committed offset) and what the old owner had
// printed; each consumer's run of a partition is gapless.
func TestGroupRebalanceProcesses(t *testing.T) {
	skipShort(t, "tierlog serve and tierlog consume processes")
	s := startServer(t, t.TempDir())
	if code, err := doJSON("POST", s.url+"/v1/topics", map[string]any{"name": "orders", "partitions": 6}, nil); err != nil || code != 201 {
		t.Fatalf("create topic: %d %v", code, err)
	}

	// The producer: one record per partition per request, until stopped.
	stopProduce := make(chan struct{})
	produced := make(chan int, 1)
	go func() {
		n := 0
		defer func() { produced <- n }()
		for seq := 0; ; seq++ {
			select {
			case <-stopProduce:
				return
			default:
			}
			type rec struct {
				Value     string `json:"value"`
				Partition int    `json:"partition"`
			}
			var recs []rec
			for p := range 6 {
				recs = append(recs, rec{fmt.Sprintf("v%d.%d", seq, p), p})
			}
			code, err := doJSON("POST", s.url+"/v1/topics/orders/records", map[string]any{"records": recs}, nil)
			if err != nil || code != http.StatusOK {
				t.Errorf("produce: %d %v", code, err)
				return
			}
			n += len(recs)
			time.Sleep(20 * time.Millisecond) // pacing the load, not synchronizing
		}
	}()

	// Between changes each consumer prints a few hundred records (a few
	// seconds at this rate), so commits (once a second) land in between.
	const step = 150
	c1 := startGroupConsumer(t, s.url, "c1")
	c1.waitPrinted(t, step)
	c2 := startGroupConsumer(t, s.url, "c2") // joins: takes half of c1's
	c2.waitPrinted(t, step)
	c3 := startGroupConsumer(t, s.url, "c3")
	c3.waitPrinted(t, step)
	c1.stop(t) // commits and leaves: c2 and c3 take its partitions
	c2.waitPrinted(t, step)
	c3.waitPrinted(t, step)
	c2.stop(t)
	c3.waitPrinted(t, step)
	close(stopProduce)
	total := <-produced
	if t.Failed() {
		t.FailNow()
	}
	// c3 now holds every partition: wait until it printed up to each high
	// watermark, then stop it.
	hws := make([]int64, 6)
	for p := range 6 {
		var o struct {
			HighWatermark int64 `json:"high_watermark"`
		}
		if _, err := doJSON("GET", fmt.Sprintf("%s/v1/topics/orders/partitions/%d/offsets", s.url, p), nil, &o); err != nil {
			t.Fatal(err)
		}
		hws[p] = o.HighWatermark
	}
	var sum int64
	for _, hw := range hws {
		sum += hw
	}
	if sum != int64(total) {
		t.Fatalf("high watermarks sum to %d, %d records acknowledged", sum, total)
	}
	all := func() map[[2]int64]int {
		seen := map[[2]int64]int{}
		for _, c := range []*groupConsumer{c1, c2, c3} {
			for _, d := range c.deliveries() {
				seen[[2]int64{int64(d.p), d.off}]++
			}
		}
		return seen
	}
	for {
		if len(all()) == total {
			break
		}
		c3.waitPrinted(t, 1)
	}
	c3.stop(t)

	// Every record delivered, with the value produced at its offset.
	seen := all()
	for p := range 6 {
		for off := range hws[p] {
			if seen[[2]int64{int64(p), off}] == 0 {
				t.Errorf("partition %d offset %d was never delivered", p, off)
			}
		}
	}
	// Each consumer's deliveries of a partition are runs of consecutive
	// offsets; a duplicate lies where the runs of two consumers overlap.
	type run struct {
		who        string
		p          int
		from, last int64
	}
	var runs []run
	owners := map[int]map[string]bool{}
	for _, c := range []*groupConsumer{c1, c2, c3} {
		open := map[int]int{} // partition -> index in runs of its current run
		for _, d := range c.deliveries() {
			if !strings.HasSuffix(d.value, "."+strconv.Itoa(d.p)) {
				t.Fatalf("%s printed %q for partition %d", c.name, d.value, d.p)
			}
			if owners[d.p] == nil {
				owners[d.p] = map[string]bool{}
			}
			owners[d.p][c.name] = true
			i, ok := open[d.p]
			switch {
			case ok && d.off == runs[i].last+1:
				runs[i].last = d.off
			case ok && d.off <= runs[i].last:
				t.Fatalf("%s delivered partition %d offset %d after %d", c.name, d.p, d.off, runs[i].last)
			default: // a new run: the partition was (re)assigned
				runs = append(runs, run{c.name, d.p, d.off, d.off})
				open[d.p] = len(runs) - 1
			}
		}
	}
	dups, moved := 0, 0
	for p := range 6 {
		n := 0
		for off := range hws[p] {
			if k := seen[[2]int64{int64(p), off}]; k > 1 {
				n += k - 1
			}
		}
		if len(owners[p]) > 1 {
			moved++
		} else if n > 0 {
			t.Errorf("partition %d never moved but %d records were delivered twice", p, n)
		}
		dups += n
		var rs []string
		for _, r := range runs {
			if r.p == p {
				rs = append(rs, fmt.Sprintf("%s[%d..%d]", r.who, r.from, r.last))
			}
		}
		t.Logf("partition %d: %d records, %d delivered twice; runs %s", p, hws[p], n, strings.Join(rs, " "))
	}
	t.Logf("%d records produced, %d delivered twice (uncommitted windows of moved partitions), %d of 6 partitions moved", total, dups, moved)
	if moved == 0 {
		t.Fatal("no partition moved between consumers: the group never rebalanced")
	}
	if dups > total/2 {
		t.Fatalf("%d of %d records delivered twice: more than the uncommitted windows can hold", dups, total)
	}
}
