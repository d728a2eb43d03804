// Command zipbin packs executables into Lambda deployment zips, so `make
// build` needs no zip program:
//
//	go run ./tools/zipbin [-name bootstrap] out.zip=path/to/binary ...
//
// Each out.zip holds one entry, -name (default "bootstrap", what the
// provided.al2023 runtime executes), with mode 0755 and a fixed time
// (SOURCE_DATE_EPOCH, else 1980-01-01), so the same binary gives the same
// zip byte for byte. The zip is written next to its final name and renamed
// into place.
package main

import (
	"archive/zip"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

func main() {
	name := flag.String("name", "bootstrap", "name of the entry in each zip")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: zipbin [-name bootstrap] out.zip=binary ...\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() == 0 {
		flag.Usage()
		os.Exit(2)
	}
	mtime, err := modTime()
	if err != nil {
		fmt.Fprintln(os.Stderr, "zipbin:", err)
		os.Exit(2)
	}
	for _, arg := range flag.Args() {
		out, in, ok := strings.Cut(arg, "=")
		if !ok || out == "" || in == "" {
			fmt.Fprintf(os.Stderr, "zipbin: %q: want out.zip=binary\n", arg)
			os.Exit(2)
		}
		n, err := pack(out, in, *name, mtime)
		if err != nil {
			fmt.Fprintln(os.Stderr, "zipbin:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %s (%d bytes)\n", out, *name, n)
	}
}

// modTime is SOURCE_DATE_EPOCH (reproducible builds), else the zip epoch.
func modTime() (time.Time, error) {
	if v := os.Getenv("SOURCE_DATE_EPOCH"); v != "" {
		s, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q: %w", v, err)
		}
		return time.Unix(s, 0).UTC(), nil
	}
	return time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC), nil
}

// pack writes out with one entry, name, holding the bytes of in, and
// returns the size of the zip.
func pack(out, in, name string, mtime time.Time) (int64, error) {
	src, err := os.Open(in)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	if fi, err := src.Stat(); err != nil {
		return 0, err
	} else if !fi.Mode().IsRegular() {
		return 0, fmt.Errorf("%s is not a regular file", in)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), ".zipbin-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name()) // after a successful rename: a no-op
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return 0, err
	}
	zw := zip.NewWriter(tmp)
	h := &zip.FileHeader{Name: name, Method: zip.Deflate, Modified: mtime}
	h.SetMode(0o755) // Lambda executes bootstrap: the Unix mode must say so
	w, err := zw.CreateHeader(h)
	if err == nil {
		_, err = io.Copy(w, src)
	}
	if err == nil {
		err = zw.Close()
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, errors.Join(fmt.Errorf("write %s", out), err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return 0, err
	}
	fi, err := os.Stat(out)
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
