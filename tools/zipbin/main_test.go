package main

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestPack(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "fn")
	content := bytes.Repeat([]byte("\x7fELF binary "), 1000)
	if err := os.WriteFile(bin, content, 0o755); err != nil {
		t.Fatal(err)
	}
	mtime := time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)
	out := filepath.Join(dir, "dist", "fn.zip")
	if _, err := pack(out, bin, "bootstrap", mtime); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := zip.OpenReader(out)
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != "bootstrap" {
		t.Fatalf("entries: %+v", zr.File)
	}
	f := zr.File[0]
	if f.Mode().Perm() != 0o755 || !f.Mode().IsRegular() {
		t.Fatalf("mode %v, want -rwxr-xr-x", f.Mode())
	}
	rc, err := f.Open()
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || !bytes.Equal(got, content) {
		t.Fatalf("content differs (err %v)", err)
	}
	// Reproducible: packing again gives the same bytes.
	if _, err := pack(out, bin, "bootstrap", mtime); err != nil {
		t.Fatal(err)
	}
	second, _ := os.ReadFile(out)
	if !bytes.Equal(first, second) {
		t.Fatal("two packs of one binary differ")
	}
	if _, err := pack(out, dir, "bootstrap", mtime); err == nil {
		t.Fatal("packing a directory succeeded")
	}
}
