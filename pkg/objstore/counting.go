package objstore

import (
	"context"
	"io"
	"sync/atomic"
)

// Op names a Store method, for Counters and fault injection.
type Op int

// The Store operations. Their String forms are the Snapshot keys.
const (
	OpPut Op = iota
	OpPutIfAbsent
	OpGet
	OpHead
	OpList
	OpDelete
	numOps
)

// Ops lists every Op, in declaration order.
var Ops = [...]Op{OpPut, OpPutIfAbsent, OpGet, OpHead, OpList, OpDelete}

var opNames = [numOps]string{"put", "put_if_absent", "get", "head", "list", "delete"}

func (o Op) String() string {
	if o < 0 || o >= numOps {
		return "op?"
	}
	return opNames[o]
}

// Counters counts Store calls, failed calls and bytes moved. The zero
// value is ready to use; it is safe for concurrent use and never blocks.
//
// It counts calls to the Store interface. On S3 each call is one request
// except a multipart Put (one per part, plus two) and SDK retries; a Get
// with n == 0, or a Get with n < 0 whose offset is past the end, adds a
// HEAD. Bytes up are the sizes passed to Put and PutIfAbsent, counted
// whether or not the call succeeded (the body may have been sent); bytes
// down are the bytes Get returned.
type Counters struct {
	calls     [numOps]atomic.Int64
	errs      [numOps]atomic.Int64
	bytesUp   atomic.Int64
	bytesDown atomic.Int64
}

// Calls returns how many calls of op were made.
func (c *Counters) Calls(op Op) int64 { return c.calls[op].Load() }

// Errors returns how many calls of op returned an error. ErrNotFound from
// Get and Head and ErrExists from PutIfAbsent count as errors.
func (c *Counters) Errors(op Op) int64 { return c.errs[op].Load() }

// BytesUp returns the bytes offered to Put and PutIfAbsent.
func (c *Counters) BytesUp() int64 { return c.bytesUp.Load() }

// BytesDown returns the bytes returned by Get.
func (c *Counters) BytesDown() int64 { return c.bytesDown.Load() }

// Snapshot returns every counter by name: "<op>" for calls (put,
// put_if_absent, get, head, list, delete), "<op>_errors" for failed calls,
// and "bytes_up", "bytes_down". Each value is read atomically, but the map
// is not one atomic snapshot of all of them.
func (c *Counters) Snapshot() map[string]int64 {
	m := make(map[string]int64, 2*int(numOps)+2)
	for _, op := range Ops {
		m[op.String()] = c.Calls(op)
		m[op.String()+"_errors"] = c.Errors(op)
	}
	m["bytes_up"] = c.BytesUp()
	m["bytes_down"] = c.BytesDown()
	return m
}

// Reset sets every counter to zero.
func (c *Counters) Reset() {
	for i := range c.calls {
		c.calls[i].Store(0)
		c.errs[i].Store(0)
	}
	c.bytesUp.Store(0)
	c.bytesDown.Store(0)
}

func (c *Counters) done(op Op, err error) {
	c.calls[op].Add(1)
	if err != nil {
		c.errs[op].Add(1)
	}
}

// Counting returns a Store that forwards every call to s and counts it in
// c. Several Stores may share one Counters. If s is Files, so is the
// Store returned: each ReadAt of an opened object counts as a Get (the
// ranged GET it stands for), and an open that fails as a failed Get.
func Counting(s Store, c *Counters) Store {
	w := &counting{s: s, c: c}
	if f, ok := s.(Files); ok {
		return &countingFiles{counting: w, f: f}
	}
	return w
}

type countingFiles struct {
	*counting
	f Files
}

var _ Files = (*countingFiles)(nil)

func (w *countingFiles) OpenObject(ctx context.Context, key string) (Object, error) {
	o, err := w.f.OpenObject(ctx, key)
	if err != nil {
		w.c.done(OpGet, err)
		return nil, err
	}
	return &countingObject{Object: o, c: w.c}, nil
}

type countingObject struct {
	Object
	c *Counters
}

func (o *countingObject) ReadAt(p []byte, off int64) (int, error) {
	n, err := o.Object.ReadAt(p, off)
	o.c.done(OpGet, err)
	o.c.bytesDown.Add(int64(n))
	return n, err
}

type counting struct {
	s Store
	c *Counters
}

var _ Store = (*counting)(nil)

func (w *counting) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	err := w.s.Put(ctx, key, body, size)
	w.c.done(OpPut, err)
	w.c.bytesUp.Add(max(size, 0))
	return err
}

func (w *counting) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	err := w.s.PutIfAbsent(ctx, key, body, size)
	w.c.done(OpPutIfAbsent, err)
	w.c.bytesUp.Add(max(size, 0))
	return err
}

func (w *counting) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	b, err := w.s.Get(ctx, key, off, n)
	w.c.done(OpGet, err)
	w.c.bytesDown.Add(int64(len(b)))
	return b, err
}

func (w *counting) Head(ctx context.Context, key string) (Info, error) {
	info, err := w.s.Head(ctx, key)
	w.c.done(OpHead, err)
	return info, err
}

func (w *counting) List(ctx context.Context, prefix string) ([]Info, error) {
	infos, err := w.s.List(ctx, prefix)
	w.c.done(OpList, err)
	return infos, err
}

func (w *counting) Delete(ctx context.Context, key string) error {
	err := w.s.Delete(ctx, key)
	w.c.done(OpDelete, err)
	return err
}
