package sim

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/pkg/segment"
)

// FSFaults are the rates (per call) of the file system's faults.
type FSFaults struct {
	FsyncFail       float64 // fsync (or close) fails: EIO, and the unsynced pages are dropped (some may have reached the server)
	WriteFail       float64 // pwrite fails with EIO, nothing written
	ShortWrite      float64 // pwrite writes a prefix and reports EIO
	NoSpace         float64 // pwrite or create fails with ENOSPC
	CreateFail      float64 // an exclusive create fails (EIO), nothing created
	CreateLostReply float64 // an exclusive create is applied at the server but the reply is lost (EIO)
	StaleHandle     float64 // an open through a cached name whose file is gone answers ESTALE (else looks up again)
	RemoveLostReply float64 // a remove is applied but answers EIO
	// SilentWriteback: a background writeback fails; its pages are
	// dropped (marked clean, as Linux does) and the error is reported by
	// the next fsync (or close) of the file, once.
	SilentWriteback float64
	// The write buffer's traps (docs/internals.md "Many writers: the write
	// buffer"). A client trusts its name cache (positive and negative
	// entries) and its directory listings for AttrTimeout (0: 1.5 s): a
	// cached listing misses files other clients created since, and a stat
	// of a name this client looked up before answers "absent" from its
	// negative entry.
	AttrTimeout time.Duration
	// StaleList: a listing read from the server (no fresh cached one)
	// still misses each file another client created within AttrTimeout,
	// with this probability (the directory's cached attributes had not
	// expired, so the client kept its older READDIR pages).
	StaleList float64
	// NegativeHit: an open (not a create) of a name whose negative entry
	// is fresh answers "absent" from the cache with this probability, else
	// looks it up again. (Stat always trusts a fresh negative entry.)
	NegativeHit float64
	// LyingFsync drops the unsynced pages and reports success: a broken
	// storage no protocol can survive. Only the self-test uses it, to show
	// the checks catch lost acknowledged data.
	LyingFsync float64
}

// inode is a file at the server. Its data is never modified in place (a
// new slice per change), so a client's snapshot is a reference.
type inode struct {
	ino       int
	data      []byte
	mtime     time.Duration
	removed   bool
	removedBy int // client id
	created   time.Duration
	creator   int // client id
}

// Server is the NFS server: the durable contents every client sees after
// close-to-open, and the only namespace.
type Server struct {
	w       *World
	names   map[string]*inode // file path -> inode
	dirs    map[string]bool
	nextIno int
	clients []*Client
	faults  FSFaults
	nextCli int
	off     bool // faults disabled
}

func newServer(w *World, f FSFaults) *Server {
	return &Server{w: w, names: map[string]*inode{}, dirs: map[string]bool{"/": true}, faults: f}
}

// attrTimeout is how long a client trusts its cached names and listings
// by default (FSFaults.AttrTimeout).
const attrTimeout = 1500 * time.Millisecond

func (c *Client) attrTimeout() time.Duration {
	if t := c.srv.faults.AttrTimeout; t > 0 {
		return t
	}
	return attrTimeout
}

type pwrite struct {
	off  int64
	data []byte
}

// cache is a client's view of one inode: the server contents it last
// fetched, with its own unsynced writes on top.
type cache struct {
	base  []byte
	dirty []pwrite
	wbErr bool // a background writeback failed: the next fsync reports EIO
}

type dentry struct {
	ino *inode // nil: negative entry (looked up and absent)
	at  time.Duration
}

type listing struct {
	names []string
	at    time.Duration
}

// Client is one NFS client (one process or Lambda container): its own page
// cache, attribute and name cache, and directory listing cache.
type Client struct {
	srv   *Server
	id    int
	actor *Actor // nil: the checker (no yields, no faults)
	pages map[*inode]*cache
	names map[string]dentry
	lists map[string]listing
	dead  bool
	// noFaults: the checker's client, which sees only durable server state.
	noFaults bool
}

var errDead = errors.New("sim: client crashed")

// NewClient returns a new client of the server for actor a.
func (s *Server) NewClient(a *Actor) *Client {
	c := &Client{srv: s, id: s.nextCli, actor: a, pages: map[*inode]*cache{}, names: map[string]dentry{}, lists: map[string]listing{}}
	s.nextCli++
	if a == nil {
		c.noFaults = true
	} else {
		s.clients = append(s.clients, c)
	}
	return c
}

// crash loses the client's unsynced pages and invalidates its handles.
func (c *Client) crash() {
	c.dead = true
	c.pages = map[*inode]*cache{}
}

func (c *Client) fault(p float64) bool {
	if c.noFaults || c.srv.off {
		return false
	}
	return c.srv.w.s.chance(p)
}

func (c *Client) now() time.Duration { return c.srv.w.s.now }

// view is the bytes this client reads for ino.
func (c *Client) view(ino *inode) []byte {
	pc := c.pages[ino]
	if pc == nil {
		return ino.data
	}
	if len(pc.dirty) == 0 {
		return pc.base
	}
	b := append([]byte(nil), pc.base...)
	for _, w := range pc.dirty {
		b = applyWrite(b, w)
	}
	return b
}

func applyWrite(b []byte, w pwrite) []byte {
	if w.data == nil { // truncate
		if int64(len(b)) > w.off {
			return b[:w.off]
		}
		return append(b, make([]byte, w.off-int64(len(b)))...)
	}
	end := w.off + int64(len(w.data))
	if int64(len(b)) < end {
		b = append(b, make([]byte, end-int64(len(b)))...)
	}
	copy(b[w.off:], w.data)
	return b
}

// flush sends n of the client's unsynced writes of ino to the server (all
// when n < 0) and drops the rest when drop.
func (c *Client) flush(ino *inode, n int, drop bool) {
	pc := c.pages[ino]
	if pc == nil {
		return
	}
	if n < 0 || n > len(pc.dirty) {
		n = len(pc.dirty)
	}
	if n > 0 {
		b := append([]byte(nil), ino.data...)
		for _, w := range pc.dirty[:n] {
			b = applyWrite(b, w)
		}
		ino.data = b
		ino.mtime = c.now()
	}
	pc.dirty = pc.dirty[n:]
	if drop {
		pc.dirty = nil
	}
	pc.base = ino.data
}

// writeback is the client's background writeback: some of its unsynced
// pages reach the server without an fsync (memory pressure, a timer).
func (c *Client) writeback() string {
	if c.dead {
		return ""
	}
	inos := make([]*inode, 0, len(c.pages))
	for ino, pc := range c.pages {
		if len(pc.dirty) > 0 {
			inos = append(inos, ino)
		}
	}
	if len(inos) == 0 {
		return ""
	}
	sort.Slice(inos, func(i, j int) bool { return inos[i].ino < inos[j].ino })
	ino := inos[c.srv.w.s.rng.IntN(len(inos))]
	n := 1 + c.srv.w.s.rng.IntN(len(c.pages[ino].dirty))
	if c.fault(c.srv.faults.SilentWriteback) {
		pc := c.pages[ino]
		pc.dirty = append([]pwrite(nil), pc.dirty[n:]...)
		pc.wbErr = true
		c.srv.w.res.Faults["failed writeback"]++
		return fmt.Sprintf("FAILED writeback client %d inode %d: %d writes dropped, EIO at the next fsync", c.id, ino.ino, n)
	}
	c.flush(ino, n, false)
	return fmt.Sprintf("writeback client %d inode %d: %d writes", c.id, ino.ino, n)
}

func pathErr(op, name string, err error) error { return &fs.PathError{Op: op, Path: name, Err: err} }

// lookup resolves name: through the client's name cache while it is fresh,
// else at the server (and caches the answer, negative too).
func (c *Client) lookup(name string) (*inode, bool) {
	if d, ok := c.names[name]; ok && c.now()-d.at < c.attrTimeout() {
		return d.ino, true
	}
	ino := c.srv.names[name]
	c.names[name] = dentry{ino: ino, at: c.now()}
	return ino, false
}

func (c *Client) begin(op, name string) error {
	if !c.actor.enter(op, name) || c.dead {
		return errDead
	}
	return nil
}

// OpenFile implements segment.FS.
func (c *Client) OpenFile(name string, flag int, perm os.FileMode) (segment.File, error) {
	name = path.Clean(name)
	op := opOpen
	if flag&os.O_CREATE != 0 {
		op = opCreate
	}
	if err := c.begin(op, name); err != nil {
		return nil, pathErr("open", name, err)
	}
	if err := c.srv.w.scripted(c.actor, op, name); err != nil {
		c.actor.note("open %s flag %#x: %v (scripted)", short(name), flag, err)
		return nil, pathErr("open", name, err)
	}
	f, err := c.open(name, flag)
	if err != nil {
		c.actor.note("open %s flag %#x: %v", short(name), flag, err)
		return nil, err
	}
	c.actor.note("open %s flag %#x: inode %d size %d", short(name), flag, f.ino.ino, len(c.view(f.ino)))
	if c.actor != nil && path.Base(name) == "checkpoint" && flag == os.O_RDONLY {
		// A reader's view from the checkpoint: the incarnation it reads
		// is the one whose directory holds it (as a metadata read of
		// that incarnation's item would say; brokers.go current).
		inc := path.Base(path.Dir(path.Dir(name)))
		if i := strings.LastIndexByte(inc, '~'); i >= 0 {
			c.srv.w.net.lastRead[c.actor] = stepOf{id: inc[i+1:], step: c.srv.w.s.step}
		}
	}
	return f, nil
}

func (c *Client) open(name string, flag int) (*File, error) {
	s := c.srv
	if !s.dirs[path.Dir(name)] {
		return nil, pathErr("open", name, fs.ErrNotExist)
	}
	if flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0 {
		// Exclusive create goes to the server.
		if c.fault(s.faults.CreateFail) {
			return nil, pathErr("open", name, syscall.EIO)
		}
		if c.fault(s.faults.NoSpace) {
			return nil, pathErr("open", name, syscall.ENOSPC)
		}
		if s.names[name] != nil {
			c.names[name] = dentry{ino: s.names[name], at: c.now()}
			return nil, pathErr("open", name, fs.ErrExist)
		}
		ino := s.create(name, c.id)
		c.names[name] = dentry{ino: ino, at: c.now()}
		delete(c.lists, path.Dir(name))
		if c.fault(s.faults.CreateLostReply) {
			return nil, pathErr("open", name, syscall.EIO)
		}
		return c.handle(ino, name, flag), nil
	}
	ino, cached := c.lookup(name)
	if ino != nil && ino.removed {
		// A cached name of a file another client removed.
		if ino.removedBy != c.id && c.fault(s.faults.StaleHandle) {
			return nil, pathErr("open", name, syscall.ESTALE)
		}
		ino = s.names[name]
		c.names[name] = dentry{ino: ino, at: c.now()}
		cached = false
	}
	if ino == nil && cached && s.names[name] != nil && !c.fault(s.faults.NegativeHit) {
		// A negative entry not trusted this time: look up again.
		ino = s.names[name]
		c.names[name] = dentry{ino: ino, at: c.now()}
	}
	if ino == nil {
		if flag&os.O_CREATE == 0 {
			return nil, pathErr("open", name, fs.ErrNotExist)
		}
		if s.names[name] != nil {
			ino = s.names[name]
		} else {
			if c.fault(s.faults.NoSpace) {
				return nil, pathErr("open", name, syscall.ENOSPC)
			}
			ino = s.create(name, c.id)
			delete(c.lists, path.Dir(name))
		}
		c.names[name] = dentry{ino: ino, at: c.now()}
	}
	f := c.handle(ino, name, flag)
	if flag&os.O_TRUNC != 0 {
		c.truncate(ino, 0)
	}
	return f, nil
}

func (s *Server) create(name string, client int) *inode {
	s.nextIno++
	ino := &inode{ino: s.nextIno, mtime: s.w.s.now, created: s.w.s.now, creator: client}
	s.names[name] = ino
	return ino
}

// handle opens ino: close-to-open, the client revalidates and takes the
// server's current contents (keeping its own unsynced writes on top).
func (c *Client) handle(ino *inode, name string, flag int) *File {
	if pc := c.pages[ino]; pc != nil {
		pc.base = ino.data
	} else {
		c.pages[ino] = &cache{base: ino.data}
	}
	return &File{c: c, ino: ino, flag: flag, name: name}
}

func (c *Client) truncate(ino *inode, size int64) {
	// NFS: flush unsynced pages, then SETATTR at the server.
	c.flush(ino, -1, false)
	ino.data = applyWrite(append([]byte(nil), ino.data...), pwrite{off: size})
	ino.mtime = c.now()
	if pc := c.pages[ino]; pc != nil {
		pc.base = ino.data
	}
}

// File is an open file of a Client. It implements segment.File.
type File struct {
	c      *Client
	ino    *inode
	flag   int
	name   string
	closed bool
}

func (f *File) stale() bool { return f.ino.removed && f.ino.removedBy != f.c.id }

func (f *File) contents() []byte { return f.c.view(f.ino) }

// ReadAt implements io.ReaderAt.
func (f *File) ReadAt(b []byte, off int64) (int, error) {
	if err := f.c.begin(opRead, f.name); err != nil {
		return 0, err
	}
	n, err := f.readAt(b, off)
	f.c.actor.note("read inode %d [%d,+%d): %d %v", f.ino.ino, off, len(b), n, err)
	return n, err
}

func (f *File) readAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.stale() {
		return 0, syscall.ESTALE
	}
	data := f.contents()
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// WriteAt implements io.WriterAt: the bytes stay in the client's cache
// until fsync, close or background writeback.
func (f *File) WriteAt(b []byte, off int64) (int, error) {
	if err := f.c.begin(opWrite, f.name); err != nil {
		return 0, err
	}
	if err := f.c.srv.w.scripted(f.c.actor, opWrite, f.name); err != nil {
		f.c.actor.note("pwrite %s [%d,+%d): %v (scripted)", short(f.name), off, len(b), err)
		return 0, err
	}
	n, err := f.writeAt(b, off)
	f.c.actor.note("pwrite inode %d [%d,+%d) %q: %d %v", f.ino.ino, off, len(b), peek(b), n, err)
	return n, err
}

func peek(b []byte) string {
	if len(b) > 48 {
		return string(b[28:48])
	}
	return string(b)
}

func (f *File) writeAt(b []byte, off int64) (int, error) {
	if f.closed {
		return 0, os.ErrClosed
	}
	if f.flag&(os.O_WRONLY|os.O_RDWR) == 0 {
		return 0, syscall.EBADF
	}
	if f.stale() {
		return 0, syscall.ESTALE
	}
	s := f.c.srv
	if f.c.fault(s.faults.WriteFail) {
		return 0, syscall.EIO
	}
	if f.c.fault(s.faults.NoSpace) {
		return 0, syscall.ENOSPC
	}
	n := len(b)
	var err error
	if n > 1 && f.c.fault(s.faults.ShortWrite) {
		n = 1 + s.w.s.rng.IntN(n-1)
		err = syscall.EIO
	}
	pc := f.c.pages[f.ino]
	if pc == nil {
		pc = &cache{base: f.ino.data}
		f.c.pages[f.ino] = pc
	}
	pc.dirty = append(pc.dirty, pwrite{off: off, data: append([]byte(nil), b[:n]...)})
	return n, err
}

// Sync implements fsync: the client's unsynced writes of the file go to
// the server. A failed fsync may have sent some of them, and drops the
// rest (as Linux does after a failed writeback).
func (f *File) Sync() error {
	if err := f.c.begin(opSync, f.name); err != nil {
		return err
	}
	if err := f.c.srv.w.scripted(f.c.actor, opSync, f.name); err != nil {
		// A scripted failed fsync drops the unsynced pages.
		f.c.flush(f.ino, 0, true)
		f.c.actor.note("fsync %s: %v (scripted; unsynced pages dropped)", short(f.name), err)
		return err
	}
	err := f.sync()
	f.c.actor.note("fsync inode %d: %v", f.ino.ino, err)
	return err
}

func (f *File) sync() error {
	if f.closed {
		return os.ErrClosed
	}
	if f.stale() {
		return syscall.ESTALE
	}
	return f.c.commit(f.ino)
}

func (c *Client) commit(ino *inode) error {
	pc := c.pages[ino]
	if pc != nil && pc.wbErr {
		pc.wbErr = false
		c.flush(ino, -1, false)
		return syscall.EIO
	}
	if pc != nil && len(pc.dirty) > 0 && c.fault(c.srv.faults.LyingFsync) {
		c.flush(ino, 0, true)
		return nil
	}
	if pc != nil && len(pc.dirty) > 0 && c.fault(c.srv.faults.FsyncFail) {
		n := c.srv.w.s.rng.IntN(len(pc.dirty) + 1)
		c.flush(ino, n, true)
		return syscall.EIO
	}
	c.flush(ino, -1, false)
	return nil
}

// Truncate implements ftruncate (synchronous at the server).
func (f *File) Truncate(size int64) error {
	if err := f.c.begin(opTruncate, f.name); err != nil {
		return err
	}
	var err error
	switch {
	case f.closed:
		err = os.ErrClosed
	case f.stale():
		err = syscall.ESTALE
	default:
		f.c.truncate(f.ino, size)
	}
	f.c.actor.note("truncate inode %d to %d: %v", f.ino.ino, size, err)
	return err
}

// Stat implements fstat.
func (f *File) Stat() (os.FileInfo, error) {
	if err := f.c.begin(opFstat, f.name); err != nil {
		return nil, err
	}
	if f.closed {
		return nil, os.ErrClosed
	}
	if f.stale() {
		return nil, syscall.ESTALE
	}
	fi := fileInfo{name: fmt.Sprint(f.ino.ino), size: int64(len(f.contents())), mtime: f.ino.mtime}
	f.c.actor.note("fstat inode %d: size %d", f.ino.ino, fi.size)
	return fi, nil
}

// Close implements close: close-to-open flushes the unsynced writes, and
// reports a failed writeback.
func (f *File) Close() error {
	if f.closed {
		return os.ErrClosed
	}
	f.closed = true
	if err := f.c.begin(opClose, f.name); err != nil {
		return err
	}
	var err error
	if pc := f.c.pages[f.ino]; !f.stale() && pc != nil && (len(pc.dirty) > 0 || pc.wbErr) {
		err = f.c.commit(f.ino)
	}
	f.c.actor.note("close inode %d: %v", f.ino.ino, err)
	return err
}

// Remove implements segment.FS.
func (c *Client) Remove(name string) error {
	name = path.Clean(name)
	if err := c.begin(opRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	if err := c.srv.w.scripted(c.actor, opRemove, name); err != nil {
		return pathErr("remove", name, err)
	}
	s := c.srv
	var err error
	if ino := s.names[name]; ino != nil {
		delete(s.names, name)
		ino.removed, ino.removedBy = true, c.id
		delete(c.names, name)
		delete(c.lists, path.Dir(name))
		if c.fault(s.faults.RemoveLostReply) {
			err = pathErr("remove", name, syscall.EIO)
		}
	} else if s.dirs[name] {
		if len(s.children(name)) > 0 {
			err = pathErr("remove", name, syscall.ENOTEMPTY)
		} else {
			delete(s.dirs, name)
		}
	} else {
		err = pathErr("remove", name, fs.ErrNotExist)
	}
	c.actor.note("remove %s: %v", short(name), err)
	return err
}

func (s *Server) children(dir string) []string {
	var out []string
	pre := dir + "/"
	if dir == "/" {
		pre = "/"
	}
	for n := range s.names {
		if strings.HasPrefix(n, pre) && !strings.Contains(n[len(pre):], "/") {
			out = append(out, n[len(pre):])
		}
	}
	for d := range s.dirs {
		if d != dir && strings.HasPrefix(d, pre) && !strings.Contains(d[len(pre):], "/") {
			out = append(out, d[len(pre):])
		}
	}
	sort.Strings(out)
	return out
}

// RemoveAll implements segment.FS.
func (c *Client) RemoveAll(name string) error {
	name = path.Clean(name)
	if err := c.begin(opDir, name); err != nil {
		return pathErr("removeall", name, err)
	}
	s := c.srv
	pre := name + "/"
	var names []string
	for n := range s.names {
		if n == name || strings.HasPrefix(n, pre) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		ino := s.names[n]
		delete(s.names, n)
		ino.removed, ino.removedBy = true, c.id
	}
	for d := range s.dirs {
		if d == name || strings.HasPrefix(d, pre) {
			delete(s.dirs, d)
		}
	}
	c.lists = map[string]listing{}
	c.actor.note("removeall %s: %d files", short(name), len(names))
	return nil
}

// ReadDir implements segment.FS: from the client's listing cache while it
// is fresh (a listing may miss new files and show removed ones).
func (c *Client) ReadDir(name string) ([]os.DirEntry, error) {
	name = path.Clean(name)
	if err := c.begin(opDir, name); err != nil {
		return nil, pathErr("readdir", name, err)
	}
	s := c.srv
	l, ok := c.lists[name]
	stale := 0
	if !ok || c.now()-l.at >= c.attrTimeout() {
		if !s.dirs[name] {
			c.actor.note("readdir %s: not found", short(name))
			return nil, pathErr("readdir", name, fs.ErrNotExist)
		}
		l = listing{names: s.children(name), at: c.now()}
		if s.faults.StaleList > 0 {
			// Files other clients created recently may be missing.
			kept := l.names[:0:0]
			for _, n := range l.names {
				ino := s.names[path.Join(name, n)]
				if ino != nil && ino.creator != c.id && c.now()-ino.created < c.attrTimeout() && c.fault(s.faults.StaleList) {
					stale++
					continue
				}
				kept = append(kept, n)
			}
			l.names = kept
		}
		c.lists[name] = l
	}
	if stale > 0 {
		c.srv.w.res.Faults["stale listing"]++
		c.actor.note("readdir %s: %d recent entries missing (stale)", short(name), stale)
	}
	out := make([]os.DirEntry, 0, len(l.names))
	for _, n := range l.names {
		p := path.Join(name, n)
		fi := fileInfo{name: n}
		if s.dirs[p] {
			fi.dir = true
		} else if ino := s.names[p]; ino != nil {
			fi.size, fi.mtime = int64(len(ino.data)), ino.mtime
		}
		out = append(out, fs.FileInfoToDirEntry(fi))
	}
	c.actor.note("readdir %s: %d entries", short(name), len(out))
	return out, nil
}

// Stat implements segment.FS: through the name and attribute cache.
func (c *Client) Stat(name string) (os.FileInfo, error) {
	name = path.Clean(name)
	if err := c.begin(opDir, name); err != nil {
		return nil, pathErr("stat", name, err)
	}
	s := c.srv
	if s.dirs[name] {
		return fileInfo{name: path.Base(name), dir: true}, nil
	}
	ino, _ := c.lookup(name)
	if ino == nil {
		c.actor.note("stat %s: not found", short(name))
		return nil, pathErr("stat", name, fs.ErrNotExist)
	}
	if ino.removed && ino.removedBy != c.id {
		return nil, pathErr("stat", name, syscall.ESTALE)
	}
	fi := fileInfo{name: path.Base(name), size: int64(len(c.view(ino))), mtime: ino.mtime}
	c.actor.note("stat %s: size %d", short(name), fi.size)
	return fi, nil
}

// MkdirAll implements segment.FS.
func (c *Client) MkdirAll(name string, perm os.FileMode) error {
	name = path.Clean(name)
	if err := c.begin(opDir, name); err != nil {
		return pathErr("mkdir", name, err)
	}
	for d := name; d != "/" && d != "."; d = path.Dir(d) {
		c.srv.dirs[d] = true
	}
	return nil
}

// SyncDir implements segment.FS (NFS directory operations are synchronous
// at the server).
func (c *Client) SyncDir(name string) error {
	if err := c.begin(opDir, name); err != nil {
		return pathErr("syncdir", name, err)
	}
	if !c.srv.dirs[path.Clean(name)] {
		return pathErr("syncdir", name, fs.ErrNotExist)
	}
	return nil
}

type fileInfo struct {
	name  string
	size  int64
	mtime time.Duration
	dir   bool
}

func (fi fileInfo) Name() string { return fi.name }
func (fi fileInfo) Size() int64  { return fi.size }
func (fi fileInfo) Mode() fs.FileMode {
	if fi.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (fi fileInfo) ModTime() time.Time { return time.UnixMilli(1_800_000_000_000).UTC().Add(fi.mtime) }
func (fi fileInfo) IsDir() bool        { return fi.dir }
func (fi fileInfo) Sys() any           { return nil }

// short trims the partition directory from a path for the trace.
func short(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

var _ segment.FS = (*Client)(nil)
