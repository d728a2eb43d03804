package main

import (
	"bufio"
	"fmt"
	"strconv"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

// tmplPart is a piece of a kcat-style output template: literal text, or a
// field ('t', 'p', 'o', 'T', 'k', 'K', 's', 'S', 'h', 'H').
type tmplPart struct {
	lit   string
	field byte
}

// parseTemplate reads a kcat -f template: escapes first (\n, \t, \r, \0,
// \\), then %-fields.
func parseTemplate(s string) ([]tmplPart, error) {
	s, err := unescape(s)
	if err != nil {
		return nil, err
	}
	var parts []tmplPart
	lit := []byte{}
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			lit = append(lit, s[i])
			continue
		}
		if i+1 == len(s) {
			return nil, fmt.Errorf("template %q ends with a lone %%", s)
		}
		i++
		switch c := s[i]; c {
		case '%':
			lit = append(lit, '%')
		case 't', 'p', 'o', 'T', 'k', 'K', 's', 'S', 'h', 'H':
			if len(lit) > 0 {
				parts = append(parts, tmplPart{lit: string(lit)})
				lit = []byte{}
			}
			parts = append(parts, tmplPart{field: c})
		default:
			return nil, fmt.Errorf("unknown field %%%c in template (known: %%t %%p %%o %%T %%k %%K %%s %%S %%h %%H %%%%)", c)
		}
	}
	if len(lit) > 0 {
		parts = append(parts, tmplPart{lit: string(lit)})
	}
	return parts, nil
}

func (pr *printer) printTemplate(w *bufio.Writer, m *tlclient.Message) error {
	length := func(b []byte) string {
		if b == nil {
			return "-1"
		}
		return strconv.Itoa(len(b))
	}
	for _, p := range pr.tmpl {
		switch p.field {
		case 0:
			w.WriteString(p.lit)
		case 't':
			w.WriteString(pr.topic)
		case 'p':
			w.WriteString(strconv.Itoa(m.Partition))
		case 'o':
			w.WriteString(strconv.FormatInt(m.Offset, 10))
		case 'T':
			w.WriteString(strconv.FormatInt(m.Timestamp, 10))
		case 'k':
			pr.bytes(w, m.Key)
		case 'K':
			w.WriteString(length(m.Key))
		case 's':
			pr.bytes(w, m.Value)
		case 'S':
			w.WriteString(length(m.Value))
		case 'h':
			for i, h := range m.Headers {
				if i > 0 {
					w.WriteByte(',')
				}
				w.WriteString(h.Key)
				if h.Value != nil {
					w.WriteByte('=')
					w.Write(h.Value)
				}
			}
		case 'H':
			w.WriteString(strconv.Itoa(len(m.Headers)))
		}
	}
	// bufio.Writer keeps its first error; Flush reports it.
	return nil
}

// jsonHeader is a header in consume's JSON lines, as the HTTP API's utf8
// mode shows it.
type jsonHeader struct {
	Key           string  `json:"key"`
	Value         *string `json:"value"`
	ValueEncoding string  `json:"value_encoding,omitempty"`
}

// jsonHeaders renders hs for JSON lines; nil when there are none (the
// field is left out).
func jsonHeaders(hs []tlclient.Header) []jsonHeader {
	if len(hs) == 0 {
		return nil
	}
	out := make([]jsonHeader, len(hs))
	for i, h := range hs {
		out[i].Key = h.Key
		out[i].Value, out[i].ValueEncoding = textOrBase64(h.Value) // consume.go
	}
	return out
}
