// Package jsonx writes and scans the bytes of JSON strings, fast: the
// escaper the server's fetch answers and the Go client's produce bodies
// share, and the word-at-a-time scans (SWAR: eight bytes in a uint64)
// the server's produce scanner and the escaper use to skip plain bytes.
//
// It escapes as encoding/json does with SetEscapeHTML(false): '"', '\\'
// and control characters (\b \f \n \r \t by name, the others as
// \u00XX), and U+2028 and U+2029; every other byte as it is. The fuzz
// test holds AppendString to encoding/json. The functions are safe for
// concurrent use; none allocates but to grow dst.
package jsonx

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"unicode/utf8"
)

// Word masks for SWAR scans over 8 bytes at a time.
const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// SpecialMask marks (with the high bit of each byte) the bytes of x that
// a JSON string cannot hold as they are: below 0x20, '"' and '\\'; with
// nonASCII also those of 0x80 and above. A marked word has at least one
// such byte; the marks above the first one may be false.
func SpecialMask(x uint64, nonASCII bool) uint64 {
	q := x ^ (swarOnes * '"')
	s := x ^ (swarOnes * '\\')
	m := ((x - swarOnes*0x20) &^ x) | ((q - swarOnes) &^ q) | ((s - swarOnes) &^ s)
	if nonASCII {
		m |= x
	}
	return m & swarHighs
}

// jsonSafe[b] is true for the ASCII bytes a JSON string holds as they
// are; false for control characters, '"', '\\' and every byte >= 0x80.
var jsonSafe = func() (t [256]bool) {
	for b := 0x20; b < 0x80; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return t
}()

// PrintableASCII reports whether every byte of b is in 0x20..0x7f: no
// control character, nothing of 0x80 and above. Eight words a round,
// three operations a word (a borrow can mark bytes above a true mark
// only). The loops take b apart from its front, which spares the bounds
// checks that indexing from a counter costs each load: with them this ran
// at less than half the speed.
func PrintableASCII(b []byte) bool {
	var m uint64
	for len(b) >= 64 {
		w0 := binary.LittleEndian.Uint64(b[0:])
		w1 := binary.LittleEndian.Uint64(b[8:])
		w2 := binary.LittleEndian.Uint64(b[16:])
		w3 := binary.LittleEndian.Uint64(b[24:])
		w4 := binary.LittleEndian.Uint64(b[32:])
		w5 := binary.LittleEndian.Uint64(b[40:])
		w6 := binary.LittleEndian.Uint64(b[48:])
		w7 := binary.LittleEndian.Uint64(b[56:])
		m |= (w0 - swarOnes*0x20) | w0 | (w1 - swarOnes*0x20) | w1 | (w2 - swarOnes*0x20) | w2 | (w3 - swarOnes*0x20) | w3 |
			(w4 - swarOnes*0x20) | w4 | (w5 - swarOnes*0x20) | w5 | (w6 - swarOnes*0x20) | w6 | (w7 - swarOnes*0x20) | w7
		if m&swarHighs != 0 {
			return false
		}
		b = b[64:]
	}
	for len(b) >= 8 {
		w := binary.LittleEndian.Uint64(b)
		m |= (w - swarOnes*0x20) | w
		b = b[8:]
	}
	if m&swarHighs != 0 {
		return false
	}
	for _, c := range b {
		if c < 0x20 || c >= 0x80 {
			return false
		}
	}
	return true
}

// LongString is the length from which the scans of plain strings hand
// over to the runtime's vector IndexByte: below it the calls cost more
// than they save.
const LongString = 128

// PlainUnquoted reports whether b, which holds no '"', is ASCII that needs
// no escape in a JSON string.
func PlainUnquoted(b []byte) bool {
	return bytes.IndexByte(b, '\\') < 0 && PrintableASCII(b)
}

// PlainPrefix is the length of the longest prefix of b that is ASCII and
// needs no escape in a JSON string.
func PlainPrefix(b []byte) int {
	if len(b) >= LongString && bytes.IndexByte(b, '"') < 0 && PlainUnquoted(b) {
		return len(b)
	}
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if m := SpecialMask(binary.LittleEndian.Uint64(b[i:]), true); m != 0 {
			i += bits.TrailingZeros64(m) >> 3
			for i < len(b) && jsonSafe[b[i]] { // a false mark: go on by byte
				i++
			}
			return i
		}
	}
	for i < len(b) && jsonSafe[b[i]] {
		i++
	}
	return i
}

const hexDigits = "0123456789abcdef"

// AppendEscaped appends valid UTF-8 b escaped as encoding/json escapes
// it without HTML escaping: '"', '\\' and control characters, and
// U+2028 and U+2029.
func AppendEscaped(dst, b []byte) []byte {
	start := 0
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, b[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are E2 80 A8 and E2 80 A9; b is valid UTF-8.
		if c == 0xE2 && i+2 < len(b) && b[i+1] == 0x80 && b[i+2]&^1 == 0xA8 {
			dst = append(dst, b[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[b[i+2]&0xF])
			i += 3
			start = i
			continue
		}
		i++
	}
	return append(dst, b[start:]...)
}

// AppendString appends b, which must be valid UTF-8, as a JSON string:
// quoted and escaped.
func AppendString(dst, b []byte) []byte {
	dst = append(dst, '"')
	i := PlainPrefix(b)
	dst = append(dst, b[:i]...)
	if i < len(b) {
		dst = AppendEscaped(dst, b[i:])
	}
	return append(dst, '"')
}
