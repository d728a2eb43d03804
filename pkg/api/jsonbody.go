package api

import (
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// jsonBodies recycles JSON produce bodies, as bodyPool does binary ones:
// jsonrec.ScanProduce's records alias the body, and the broker copies them.
var jsonBodies sync.Pool // *[]byte

// readPooledJSONBody is readBodyInto a pooled buffer; release gives it
// back once nothing uses the body or the records that alias it.
func readPooledJSONBody(w http.ResponseWriter, r *http.Request) (body []byte, release func(), err error) {
	p, _ := jsonBodies.Get().(*[]byte)
	if p == nil {
		p = new([]byte)
	}
	body, err = readBodyInto(w, r, (*p)[:0])
	return body, func() {
		if cap(body) <= 2*maxBodyBytes {
			*p = body[:0]
			jsonBodies.Put(p)
		}
	}, err
}

// readBodyInto reads the whole request body (limitBody: at most
// maxBodyBytes) appending to buf (len 0), which it replaces when it is
// too small for the Content-Length the client sent. On a read error it
// returns what it read before it.
func readBodyInto(w http.ResponseWriter, r *http.Request, buf []byte) ([]byte, error) {
	src := limitBody(w, r)
	n := 512
	if cl := r.ContentLength; cl > 0 && cl <= maxBodyBytes {
		n = int(cl) + 1 // room to read the EOF without growing
	}
	if cap(buf) < n {
		buf = make([]byte, 0, n)
	}
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := src.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// jsonOutPool holds output buffers of JSON fetch answers.
var jsonOutPool = sync.Pool{New: func() any { return new([]byte) }}

// encodeFetchJSON returns FetchAnswer's encoder of JSON fetch answers:
// what writeJSON would send for fetchResponse, without reflection. It
// grows dst once, to the answer's size (which for a kept answer is what it
// keeps).
func encodeFetchJSON(enc jsonrec.Encoding) func(dst []byte, res *broker.FetchResult) ([]byte, error) {
	return func(dst []byte, res *broker.FetchResult) ([]byte, error) {
		if n := jsonrec.FetchSize(res, enc); cap(dst)-len(dst) < n {
			dst = append(make([]byte, 0, len(dst)+n), dst...)
		}
		return jsonrec.AppendFetch(dst, res, enc), nil
	}
}

// writeProduceJSON sends the 200 JSON produce answer for res if no
// record failed, and reports whether it did.
func (s *server) writeProduceJSON(w http.ResponseWriter, res []broker.ProduceResult) bool {
	bp := jsonOutPool.Get().(*[]byte)
	out, ok := jsonrec.AppendProduce((*bp)[:0], res)
	if ok {
		h := w.Header()
		h.Set("Content-Type", contentTypeJSON)
		h.Set("Content-Length", strconv.Itoa(len(out)))
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
	}
	if cap(out) <= maxPooledBuffer {
		*bp = out[:0]
		jsonOutPool.Put(bp)
	}
	return ok
}
