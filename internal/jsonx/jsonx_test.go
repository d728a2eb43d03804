package jsonx

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// reference is what encoding/json writes for s: a JSON string, HTML
// characters as they are.
func reference(t *testing.T, s []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(string(s)); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}

// FuzzAppendString holds AppendString to encoding/json for every valid
// UTF-8 input, and PlainPrefix to its definition: the longest prefix that
// is ASCII and needs no escape.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{
		"", "plain", `quote " and backslash \\`, "\b\f\n\r\t\x00\x1f\x7f",
		"<html> & 'apostrophe'", "line\u2028separator\u2029", "é€𝄞", "\xe2\x80",
		string(bytes.Repeat([]byte("v"), 3*LongString)),
		string(bytes.Repeat([]byte("v"), 3*LongString)) + "\"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) {
		n := PlainPrefix(s)
		for i, c := range s[:n] {
			if c < 0x20 || c >= 0x80 || c == '"' || c == '\\' {
				t.Fatalf("PlainPrefix %d takes %#x at %d", n, c, i)
			}
		}
		if n < len(s) {
			if c := s[n]; c >= 0x20 && c < 0x80 && c != '"' && c != '\\' {
				t.Fatalf("PlainPrefix %d stops at plain %#x", n, c)
			}
		}
		if !utf8.Valid(s) {
			return
		}
		prefix := []byte("x")
		got := AppendString(prefix, s)
		if want := reference(t, s); !bytes.Equal(got[1:], want) {
			t.Fatalf("AppendString(%q)\n got %s\nwant %s", s, got[1:], want)
		}
		if got[0] != 'x' {
			t.Fatal("AppendString changed dst's bytes")
		}
	})
}

// TestPrintableASCII holds printableASCII to a byte-by-byte reference for
// every length up to three of its rounds of 64 bytes and a byte outside
// 0x20..0x7f at every position (alone, and after another), each round's
// words and the tail included.
func TestPrintableASCII(t *testing.T) {
	ref := func(b []byte) bool {
		for _, c := range b {
			if c < 0x20 || c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := 0; n <= 3*64+9; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = 0x20 + byte(i%0x60) // every printable byte, '"', '\\' and 0x7f among them
		}
		if !PrintableASCII(b) {
			t.Fatalf("length %d, all printable: false", n)
		}
		for p := range n {
			for _, bad := range []byte{0x00, 0x1f, 0x80, 0xff} {
				c := b[p]
				b[p] = bad
				if got := PrintableASCII(b); got != ref(b) || got {
					t.Fatalf("length %d, %#x at %d: %v", n, bad, p, got)
				}
				if p > 0 { // a borrow from a byte below 0x20 must not hide the next
					b[p-1] = 0x00
					if PrintableASCII(b) {
						t.Fatalf("length %d, 0x00 at %d and %#x at %d: true", n, p-1, bad, p)
					}
					b[p-1] = 0x20 + byte((p-1)%0x60)
				}
				b[p] = c
			}
		}
	}
}
