// Package local is an objstore.Store keeping each object as a file under a
// root directory: the cold tier of the embedded server and of tests. Many
// goroutines and many processes (on one host, or NFS clients that support
// link and rename, such as EFS) may share one root.
//
// Layout:
//
//	<root>/objects/<key>   one file per object; the key's '/' are directories
//	<root>/tmp/put-*       writes in progress (same file system, so rename
//	                       and link work); stale ones are removed by New
//
// Writes are atomic and durable: the body goes to a temp file, which is
// fsynced, then made visible in one step — rename(2) for Put (replacing
// any object), link(2) for PutIfAbsent (which fails if the name exists,
// atomically against every other caller and process) — and the directory
// is fsynced. Readers see the old object or the new one, never part of it.
//
// Keys are checked with objstore.CheckKey before any path is built, so no
// key can name a file outside the root. One limit the S3 adapter has not:
// a key cannot also be a directory of other keys ("a" and "a/b" cannot
// both exist); the second Put fails with an error. tierlog's keys never do
// this. A key segment longer than the file system allows in a name (255
// bytes on most) fails with the file system's error. Delete leaves empty
// directories behind.
package local

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/tierlog/tierlog/pkg/objstore"
)

// staleTemp is how old a temp file must be before New removes it: far
// longer than any write, so a live writer in another process keeps its
// file.
const staleTemp = time.Hour

// Store is the local adapter. Safe for concurrent use.
type Store struct {
	objects string // <root>/objects
	tmp     string // <root>/tmp
}

var _ objstore.Files = (*Store)(nil)

// New opens (creating if needed) a store rooted at dir, and removes temp
// files that crashed writers left more than an hour ago.
func New(dir string) (*Store, error) {
	s := &Store{
		objects: filepath.Join(dir, "objects"),
		tmp:     filepath.Join(dir, "tmp"),
	}
	for _, d := range []string{s.objects, s.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("objstore/local: %w", err)
		}
	}
	if err := syncDir(dir); err != nil {
		return nil, fmt.Errorf("objstore/local: %w", err)
	}
	s.removeStaleTemps(time.Now())
	return s, nil
}

func (s *Store) removeStaleTemps(now time.Time) {
	ents, err := os.ReadDir(s.tmp)
	if err != nil {
		return
	}
	for _, e := range ents {
		if info, err := e.Info(); err == nil && now.Sub(info.ModTime()) > staleTemp {
			_ = os.Remove(filepath.Join(s.tmp, e.Name()))
		}
	}
}

// path maps a checked key to its file.
func (s *Store) path(key string) string {
	return filepath.Join(s.objects, filepath.FromSlash(key))
}

// Put implements objstore.Store.
func (s *Store) Put(ctx context.Context, key string, body io.Reader, size int64) error {
	return s.put(ctx, key, body, size, false)
}

// PutIfAbsent implements objstore.Store.
func (s *Store) PutIfAbsent(ctx context.Context, key string, body io.Reader, size int64) error {
	return s.put(ctx, key, body, size, true)
}

func (s *Store) put(ctx context.Context, key string, body io.Reader, size int64, exclusive bool) error {
	if err := objstore.CheckKey(key); err != nil {
		return err
	}
	if size < 0 {
		return fmt.Errorf("objstore/local: key %q: negative size %d", key, size)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	final := s.path(key)
	if exclusive {
		// Cheap early answer; the link below is what decides.
		if fi, err := os.Lstat(final); err == nil && fi.Mode().IsRegular() {
			return fmt.Errorf("%w: key %q", objstore.ErrExists, key)
		}
	}

	tmpName, err := s.writeTemp(ctx, key, body, size)
	if err != nil {
		return err
	}
	// After a rename the temp name is gone; after a link or a failure it
	// must go. A failure to remove it does not undo the write, so it is
	// not reported: New removes stale temps.
	defer func() { _ = os.Remove(tmpName) }()

	dir := filepath.Dir(final)
	if err := s.mkdirs(dir); err != nil {
		return fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if exclusive {
		if err := os.Link(tmpName, final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				if fi, serr := os.Lstat(final); serr == nil && fi.IsDir() {
					return fmt.Errorf("objstore/local: key %q is a directory of other keys", key)
				}
				return fmt.Errorf("%w: key %q", objstore.ErrExists, key)
			}
			return fmt.Errorf("objstore/local: key %q: %w", key, err)
		}
	} else {
		if err := os.Rename(tmpName, final); err != nil {
			if fi, serr := os.Lstat(final); serr == nil && fi.IsDir() {
				return fmt.Errorf("objstore/local: key %q is a directory of other keys", key)
			}
			return fmt.Errorf("objstore/local: key %q: %w", key, err)
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	return nil
}

// writeTemp writes exactly size bytes of body to a new fsynced temp file
// and returns its name. On error the file is removed.
func (s *Store) writeTemp(ctx context.Context, key string, body io.Reader, size int64) (name string, err error) {
	f, err := os.CreateTemp(s.tmp, "put-*")
	if err != nil {
		return "", fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	tmpName := f.Name()
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("objstore/local: key %q: %w", key, cerr)
		}
		if err != nil {
			name = ""
			_ = os.Remove(tmpName)
		}
	}()
	if size > 0 {
		if body == nil {
			return "", fmt.Errorf("objstore/local: key %q: nil body for %d bytes", key, size)
		}
		n, err := io.CopyN(f, ctxReader{ctx, body}, size)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return "", fmt.Errorf("objstore/local: key %q: body gave %d of %d bytes: %w", key, n, size, err)
		}
	}
	if err := f.Chmod(0o644); err != nil {
		return "", fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if err := f.Sync(); err != nil {
		return "", fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	return tmpName, nil
}

// mkdirs creates dir and any missing parents under s.objects, fsyncing
// the parent of each directory it creates so the new entries survive a
// crash along with the object.
func (s *Store) mkdirs(dir string) error {
	if dir == s.objects {
		return nil
	}
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s is an object, not a directory of keys", dir)
		}
		return nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := s.mkdirs(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return s.mkdirs(dir) // a concurrent writer made it (or a file is there)
		}
		return err
	}
	return syncDir(parent)
}

// Get implements objstore.Store.
func (s *Store) Get(ctx context.Context, key string, off, n int64) ([]byte, error) {
	if err := objstore.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if off < 0 {
		return nil, fmt.Errorf("%w: key %q off %d", objstore.ErrRange, key, off)
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, s.openErr(key, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	start, end, err := objstore.Span(key, off, n, fi.Size())
	if err != nil {
		return nil, err
	}
	b := make([]byte, end-start)
	got, err := f.ReadAt(b, start)
	if got == len(b) {
		return b, nil
	}
	if err == nil || errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	return nil, fmt.Errorf("objstore/local: key %q: read %d of %d bytes at %d: %w", key, got, len(b), start, err)
}

// OpenObject implements objstore.Files: the object's file, open for
// reads. A Put replaces the file by a rename, so the open file stays the
// object as it was.
func (s *Store) OpenObject(ctx context.Context, key string) (objstore.Object, error) {
	if err := objstore.CheckKey(key); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	f, err := os.Open(s.path(key))
	if err != nil {
		return nil, s.openErr(key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	return f, nil
}

// openErr maps a failed open or stat of key's file.
func (s *Store) openErr(key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	return fmt.Errorf("objstore/local: key %q: %w", key, err)
}

// Head implements objstore.Store.
func (s *Store) Head(ctx context.Context, key string) (objstore.Info, error) {
	if err := objstore.CheckKey(key); err != nil {
		return objstore.Info{}, err
	}
	if err := ctx.Err(); err != nil {
		return objstore.Info{}, err
	}
	fi, err := os.Lstat(s.path(key))
	if err != nil {
		return objstore.Info{}, s.openErr(key, err)
	}
	if !fi.Mode().IsRegular() {
		return objstore.Info{}, fmt.Errorf("%w: key %q", objstore.ErrNotFound, key)
	}
	return objstore.Info{Key: key, Size: fi.Size()}, nil
}

// List implements objstore.Store. It walks only the directories that can
// hold matching keys.
func (s *Store) List(ctx context.Context, prefix string) ([]objstore.Info, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !objstore.PrefixCanMatch(prefix) {
		return nil, nil
	}
	start := s.objects
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		start = s.path(prefix[:i])
	}
	var out []objstore.Info
	err := filepath.WalkDir(start, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
				return nil // gone since the walk saw it, or never there
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if p == start {
			return nil
		}
		rel, err := filepath.Rel(s.objects, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			dk := key + "/"
			if !strings.HasPrefix(dk, prefix) && !strings.HasPrefix(prefix, dk) {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // deleted meanwhile
			}
			return err
		}
		out = append(out, objstore.Info{Key: key, Size: fi.Size()})
		return nil
	})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && errors.Is(err, cerr) {
			return nil, err
		}
		return nil, fmt.Errorf("objstore/local: list %q: %w", prefix, err)
	}
	slices.SortFunc(out, func(a, b objstore.Info) int { return strings.Compare(a.Key, b.Key) })
	return out, nil
}

// Delete implements objstore.Store.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := objstore.CheckKey(key); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	p := s.path(key)
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
			return nil
		}
		return fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if fi.IsDir() {
		return nil // a directory of other keys, not an object
	}
	if err := os.Remove(p); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("objstore/local: key %q: %w", key, err)
	}
	return nil
}

// syncDir makes dir's entries (a rename, link, new file or removal)
// durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// ctxReader stops a long copy when ctx ends.
type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
