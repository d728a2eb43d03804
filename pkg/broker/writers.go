package broker

import (
	"container/list"
	"context"
	"sync"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/pkg/partition"
)

// The open-file budget. A partition this process writes while keeping its
// lease (HoldLease: the local server, or the aws backend with
// ReleaseEachBatch off) keeps its writer's files open: the active
// segment's log and two indexes, and its batch file, four descriptors; a
// Lambda-mode writer keeps them open between batches too (warm, to
// continue without recovering when nobody wrote since), and a parked one
// the checkpoint as well, five. Reads open and
// close files per request. So the writers a process keeps are bounded:
// past Config.MaxOpenWriters, or once idle for Config.WriterIdle, the least
// recently used one is released (partition.Log.Release: its files synced
// and closed, its lease released cleanly; its next append acquires again
// and continues the segment).

// fdsPerWriter is the descriptors one partition's writer keeps open (a
// parked one: its checkpoint too).
const fdsPerWriter = 5

// DefaultWriterIdle is Config.WriterIdle's default.
const DefaultWriterIdle = 5 * time.Minute

// defaultMaxOpenWriters is half the process's descriptor limit
// (RLIMIT_NOFILE) in writers: the other half is for sockets, reads, the
// metadata store and the rest. At least 8.
func defaultMaxOpenWriters() int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil || lim.Cur == 0 {
		return 256
	}
	return max(8, int(min(lim.Cur, 1<<20)/2/fdsPerWriter))
}

// writers is the LRU of partition logs that may hold files open.
type writers struct {
	mu   sync.Mutex
	max  int
	idle time.Duration
	ll   *list.List // of *writerUse, most recent first
	at   map[*partition.Log]*list.Element
}

type writerUse struct {
	l    *partition.Log
	used time.Time
}

func newWriters(maxOpen int, idle time.Duration) *writers {
	return &writers{max: maxOpen, idle: idle, ll: list.New(), at: map[*partition.Log]*list.Element{}}
}

// touch records that l wrote at now, and returns the logs to release: the
// least recently used past the budget, and those idle too long.
func (w *writers) touch(l *partition.Log, now time.Time) []*partition.Log {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.at[l]; e != nil {
		e.Value.(*writerUse).used = now
		w.ll.MoveToFront(e)
	} else {
		w.at[l] = w.ll.PushFront(&writerUse{l: l, used: now})
	}
	var out []*partition.Log
	for e := w.ll.Back(); e != nil && e.Value.(*writerUse).l != l; e = w.ll.Back() {
		u := e.Value.(*writerUse)
		if w.ll.Len() <= w.max && now.Sub(u.used) < w.idle {
			break
		}
		w.ll.Remove(e)
		delete(w.at, u.l)
		out = append(out, u.l)
	}
	return out
}

// forget drops l (closed).
func (w *writers) forget(l *partition.Log) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if e := w.at[l]; e != nil {
		w.ll.Remove(e)
		delete(w.at, l)
	}
}

// len is how many logs may hold files open.
func (w *writers) len() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ll.Len()
}

// keepWriter notes that l just wrote, and releases the writers past the
// budget or idle too long (a Lambda-mode writer keeps its files open
// between batches too, its lease released: partition.Log.Release closes
// them).
func (b *Broker) keepWriter(ctx context.Context, l *partition.Log) {
	for _, old := range b.writers.touch(l, b.cfg.Now()) {
		if _, err := old.Release(context.WithoutCancel(ctx)); err != nil {
			b.cfg.Logger.Warn("release an idle partition", "err", err)
		}
	}
}
