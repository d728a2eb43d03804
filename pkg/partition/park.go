package partition

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Parking: a Lambda-mode writer (no HoldLease) that is alone on its
// partition keeps the lease between invocations instead of releasing it,
// so that its next batch is one conditional write on the item (the commit)
// instead of two (acquire, then commit and release).
//
// A parked lease is committed with LeaseUntil 0: it has expired for every
// clock, so any other writer acquires it at once, as a takeover (the
// active segment is sealed at its committed length and the taker rolls a
// new one: the parked owner may be in a round and writing that file, as
// any owner whose lease expired may be). Nothing waits for a parked
// writer, which may be a frozen container.
//
// The parked owner's next round takes no lease: it writes and fsyncs as a
// holder does, and its commit is conditional, as every commit is, on the
// epoch, owner and version it last committed. So the commit applies only
// if nobody acquired or committed since; then the files were the parked
// writer's alone, and its window, writer and view of the item were the
// committed state. If anyone did, the commit is fenced, nothing of the
// round was acknowledged, and the round runs again through an acquire
// (errParkedFenced).
//
// A parked round does not list the write buffer: writers that find the
// lease parked acquire it rather than stage. (One that staged while this
// writer's round held a live lease sees the lease free at its next poll,
// and acquires it.)
//
// A writer parks only when it has seen no other writer for SoloFor and
// its last parkAfter rounds found the partition as it left it (a warm or
// parked round, no staged batches), so writers that alternate release as
// before and only a writer alone pays nothing for the lease. Every
// parkRefresh a parked writer reads the item once, for the compactor's
// log start and cold end (the sealed segments the item lists are trimmed
// by them) and to notice early that it was taken over.

// DefaultSoloFor is how long after it last saw another writer a Log does
// not park its lease (Config.SoloFor).
const DefaultSoloFor = 10 * time.Second

const (
	// parkAfter is how many rounds in a row must have found the
	// partition as this Log left it before it parks.
	parkAfter = 2
	// parkRefresh is how often a parked writer reads the item.
	parkRefresh = 30 * time.Second
)

// parkedUntil is a parked lease's expiry: before every clock.
var parkedUntil = time.UnixMilli(0)

// errParkedFenced marks the error of a parked round whose commit was
// fenced: another writer took the lease over; the round was not
// acknowledged, and runs again with an acquire.
var errParkedFenced = errors.New("partition: parked lease taken over")

// resumeParked starts a parked round: it reports whether the Log may write
// without an acquire. Once per parkRefresh it reads the item: an item
// another writer has acquired or committed since ends the parking.
func (l *Log) resumeParked(ctx context.Context) (bool, error) {
	now := l.cfg.Now()
	if now.Sub(l.itemAt) < parkRefresh {
		return true, nil
	}
	cur, err := l.cfg.Meta.Partition(ctx, l.cfg.Key)
	if err != nil {
		return false, fmt.Errorf("%w: read partition: %w", ErrUnavailable, err)
	}
	l.itemAt = now
	if cur.Deleted || cur.Epoch != l.lease.Epoch || cur.Owner != l.lease.Owner || cur.Version != l.lease.Version {
		l.unpark()
		return false, nil
	}
	l.lease.LogStartOffset = max(l.lease.LogStartOffset, cur.LogStartOffset)
	l.lease.ColdEnd = max(l.lease.ColdEnd, cur.ColdEnd)
	trimSealed(&l.lease)
	return true, nil
}

// unpark forgets a parked lease another writer took over: its files are
// closed, and the next round acquires.
func (l *Log) unpark() {
	l.parked, l.holding = false, false
	l.closeWriter(false)
	l.sawOther()
}

// sawOther records that another writer is about: no parking for SoloFor.
func (l *Log) sawOther() {
	l.solo = 0
	l.otherAt = l.cfg.Now()
}

// mayPark reports whether a Lambda-mode commit that would release the
// lease parks it instead: this round and the parkAfter-1 before it found
// the partition as this Log left it, and no other writer was seen for
// Config.SoloFor.
func (l *Log) mayPark(tookStaged bool) bool {
	if l.cfg.HoldLease || l.cfg.SoloFor < 0 || tookStaged || !l.alone {
		return false
	}
	return l.solo+1 >= parkAfter && l.cfg.Now().Sub(l.otherAt) >= l.cfg.SoloFor
}
