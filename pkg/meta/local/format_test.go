package local

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var b []byte
	b = appendFileHeader(b, journalMagic, 7)
	payloads := [][]byte{[]byte(`{"op":"del_topic"}`), bytes.Repeat([]byte("x"), 3000), []byte("1")}
	for _, p := range payloads {
		var err error
		if b, err = appendFrame(b, p); err != nil {
			t.Fatal(err)
		}
	}
	seq, err := decodeFileHeader(b, journalMagic)
	if err != nil || seq != 7 {
		t.Fatalf("header: seq %d, %v", seq, err)
	}
	if _, err := decodeFileHeader(b, snapshotMagic); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("journal header read as snapshot: %v", err)
	}
	pos := FileHeaderSize
	for i, want := range payloads {
		got, next, err := readFrame(b, pos)
		if err != nil || !bytes.Equal(got, want) || next != pos+FrameHeaderSize+len(want) {
			t.Fatalf("frame %d: %q next %d, %v", i, got, next, err)
		}
		pos = next
	}
	if _, _, err := readFrame(b, pos); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
	if _, err := appendFrame(nil, nil); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("empty payload: %v", err)
	}
}

// FuzzReadFrames: decoding arbitrary bytes never panics, only moves
// forward, classifies every failure as torn or corrupt, and the valid
// prefix re-parses to the same frames ending cleanly.
func FuzzReadFrames(f *testing.F) {
	valid := appendFileHeader(nil, journalMagic, 1)
	for _, p := range []string{`{"op":"del_topic","name":"a"}`, `{"op":"put_offsets","group":"g","offsets":[]}`} {
		valid, _ = appendFrame(valid, []byte(p))
	}
	f.Add(valid)
	f.Add(append(bytes.Clone(valid), make([]byte, 600)...))
	f.Add(valid[:len(valid)-5])
	f.Add(append(bytes.Clone(valid), 0xff, 0xff, 0xff, 0x00, 1, 2, 3, 4))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := decodeFileHeader(b, journalMagic); err != nil {
			if !errors.Is(err, errTorn) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("header error unclassified: %v", err)
			}
			return
		}
		var frames [][]byte
		pos := FileHeaderSize
		for {
			p, next, err := readFrame(b, pos)
			if err == io.EOF {
				break
			}
			if err != nil {
				if !errors.Is(err, errTorn) && !errors.Is(err, ErrCorrupt) {
					t.Fatalf("frame error unclassified: %v", err)
				}
				break
			}
			if next <= pos {
				t.Fatalf("no progress at %d", pos)
			}
			if _, err := decodeEntry(p, pos); err != nil && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("entry error unclassified: %v", err)
			}
			frames = append(frames, p)
			pos = next
		}
		prefix := b[:pos]
		at := FileHeaderSize
		for i := range frames {
			p, next, err := readFrame(prefix, at)
			if err != nil || !bytes.Equal(p, frames[i]) {
				t.Fatalf("prefix frame %d: %v", i, err)
			}
			at = next
		}
		if _, _, err := readFrame(prefix, at); err != io.EOF {
			t.Fatalf("prefix does not end cleanly: %v", err)
		}
	})
}
