package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tierlog/tierlog/internal/jsonrec"
	"github.com/tierlog/tierlog/pkg/broker"
)

// Streaming fetch (docs/api.md "Streaming fetch (Server-Sent Events)",
// docs/api.md "Streaming fetch (Server-Sent Events)"): the fetch route with
// Accept: text/event-stream answers Server-Sent Events where the handler
// was built WithStreaming, and a plain fetch elsewhere (the Lambda
// functions, behind API Gateway).

// Streaming defaults.
const (
	// DefaultKeepAlive is how long a stream may stay silent before it
	// sends a comment line (docs/api.md: at least every 15 s while idle).
	DefaultKeepAlive = 15 * time.Second
	// DefaultStreamWriteTimeout bounds one write of a stream to its
	// client when the http.Server sets no WriteTimeout: a client that
	// stops reading ends its stream instead of holding it forever.
	DefaultStreamWriteTimeout = time.Minute
	// DefaultStreamStall is how long a stream waits for its client to
	// take a batch of events (a write to block) before it cuts the
	// stream: a client that stops reading holds the server's memory for
	// no longer. The client reconnects with Last-Event-ID.
	DefaultStreamStall = 10 * time.Second
	// streamBatchBytes bounds the records a stream reads at once, and
	// streamFlushBytes the events it encodes before it writes them: what
	// a stream whose client does not read holds.
	streamBatchBytes = 256 << 10
	streamFlushBytes = 64 << 10
	// maxStreamBody is how much of a request body a streaming fetch
	// reads (and discards) before it streams: it has no use for one, but
	// a connection whose body is unread never notices its client leave.
	maxStreamBody          = 64 << 10
	contentTypeEventStream = "text/event-stream"
	headerLastEventID      = "Last-Event-ID"
)

// StreamConfig configures streaming fetch (WithStreaming).
type StreamConfig struct {
	// KeepAlive is the longest silence of a stream: after it, a
	// ": keep-alive" comment line. 0 means DefaultKeepAlive; it is
	// capped at DefaultKeepAlive (the documented bound).
	KeepAlive time.Duration
	// WriteTimeout bounds each write to the client when the http.Server
	// has no WriteTimeout of its own (with one, each write gets that
	// server's WriteTimeout afresh, so it never cuts a stream that is
	// being read). 0 means DefaultStreamWriteTimeout.
	WriteTimeout time.Duration
	// Stall bounds each write to the client whatever the other timeouts
	// say: a client that takes no batch in that time has its stream cut
	// (the connection closed; it cannot take an event). 0 means
	// DefaultStreamStall.
	Stall time.Duration
	// Done, when closed, ends every stream (with an "unavailable" error
	// event: the client reconnects elsewhere or later). The local server
	// closes it when its http.Server shuts down, so Shutdown does not
	// wait for streams that never go idle. Nil: streams end only with
	// their client or an error.
	Done <-chan struct{}
	// Stats, if set, counts streams.
	Stats *StreamStats
}

// StreamStats counts streaming fetches. Safe for concurrent use; the
// zero value is ready.
type StreamStats struct {
	active  atomic.Int64
	started atomic.Int64
	events  atomic.Int64

	mu      sync.Mutex
	changed chan struct{} // closed (and replaced) when active changes
}

// add changes the active count by d and wakes WaitActive.
func (s *StreamStats) add(d int64) {
	s.mu.Lock()
	s.active.Add(d)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
}

// WaitActive waits until exactly n streams are active, or ctx is done.
func (s *StreamStats) WaitActive(ctx context.Context, n int64) error {
	for {
		s.mu.Lock()
		if s.active.Load() == n {
			s.mu.Unlock()
			return nil
		}
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("%d streams active, waiting for %d: %w", s.active.Load(), n, ctx.Err())
		}
	}
}

// Active is the number of streams being served now: a stream counts
// from its 200 until its handler has returned everything it held.
func (s *StreamStats) Active() int64 { return s.active.Load() }

// Started is the number of streams that got as far as their 200.
func (s *StreamStats) Started() int64 { return s.started.Load() }

// Events is the number of record events sent, over all streams.
func (s *StreamStats) Events() int64 { return s.events.Load() }

// WithStreaming makes the fetch route answer Server-Sent Events to a GET
// whose Accept names text/event-stream. Only for handlers served by
// net/http directly (the local server): an adapter that buffers the whole
// answer (API Gateway through Lambda) must leave it off, and then such a
// request is answered as a plain fetch, as docs/api.md says. Off by default.
func WithStreaming(sc StreamConfig) Option {
	return func(c *config) {
		if sc.KeepAlive <= 0 || sc.KeepAlive > DefaultKeepAlive {
			sc.KeepAlive = DefaultKeepAlive
		}
		if sc.WriteTimeout <= 0 {
			sc.WriteTimeout = DefaultStreamWriteTimeout
		}
		if sc.Stall <= 0 {
			sc.Stall = DefaultStreamStall
		}
		c.stream = &sc
	}
}

// wantsEventStream reports whether Accept names text/event-stream with a
// q other than 0.
func wantsEventStream(r *http.Request) bool {
	for _, h := range r.Header.Values("Accept") {
		if !containsFold(h, contentTypeEventStream) {
			continue
		}
		for part := range strings.SplitSeq(h, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil || mt != contentTypeEventStream {
				continue
			}
			if q, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(q, 64); err != nil || f <= 0 {
					continue
				}
			}
			return true
		}
	}
	return false
}

// streams reports whether the fetch r is to be answered as a stream.
func (s *server) streams(r *http.Request) bool {
	return s.stream != nil && r.Method == http.MethodGet && wantsEventStream(r)
}

// lastEventID reads Last-Event-ID: ok is false when absent or empty (an
// EventSource sends none before its first id). A value is an offset the
// client has: the stream starts after it.
func lastEventID(r *http.Request) (next int64, ok bool, err error) {
	vs := r.Header.Values(headerLastEventID)
	if len(vs) == 0 || (len(vs) == 1 && strings.TrimSpace(vs[0]) == "") {
		return 0, false, nil
	}
	if len(vs) > 1 {
		return 0, false, badRequest("header %s given %d times: give it once", headerLastEventID, len(vs))
	}
	v := strings.TrimSpace(vs[0])
	n, good := parseNonNegative(v, 1<<63-2)
	if !good {
		return 0, false, badRequest("header %s %s: want the offset of the last record received (an integer from 0 to %d)",
			headerLastEventID, quote(v), int64(1<<63-2))
	}
	return n + 1, true, nil
}

// sseRecordJSON appends rec as the element of a fetch answer's "records"
// array it is in mode enc (no line break: JSON escapes every control
// character, so it is one SSE data line). It is the one place a stream
// renders a record, through the fetch answer's own per-record encoder, so
// a stream and a fetch cannot differ.
func sseRecordJSON(dst []byte, rec *broker.Record, enc jsonrec.Encoding) []byte {
	return jsonrec.AppendRecord(dst, rec, enc)
}

// fetchStream serves a streaming fetch. req is the validated fetch
// (offset, max_records, max_bytes; wait_ms does not apply). Everything
// that can be refused is refused before the 200, in docs/api.md's JSON: a bad
// Last-Event-ID (400), a body too long to drain (413), the first read's
// errors (416 out of range, 404, 503...). After the 200, an error ends
// the stream with one "error" event.
func (s *server) fetchStream(w http.ResponseWriter, r *http.Request, req broker.FetchRequest, enc jsonrec.Encoding) {
	if next, ok, err := lastEventID(r); err != nil {
		s.writeError(w, r, err)
		return
	} else if ok {
		req.Offset = next // Last-Event-ID wins over offset
	}
	if r.Body != nil && r.Body != http.NoBody {
		// Read it to its end (under the body-read timeout, which reading
		// to the end clears): only then does net/http watch the
		// connection, and so see the client go away.
		_, err := io.Copy(io.Discard, http.MaxBytesReader(unwrapWriter(w), r.Body, maxStreamBody))
		if err != nil {
			s.writeError(w, r, bodyError(err))
			return
		}
	}
	// Deferred first, so it runs last: a stream stops counting as active
	// only once everything it held is given back.
	stats := s.stream.Stats
	counted := false
	watcher := make(chan struct{})
	defer func() {
		<-watcher
		if counted {
			stats.add(-1)
		}
	}()
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	go func() { // ends the stream on Done; returns with it
		defer close(watcher)
		select {
		case <-s.stream.Done: // nil: never
			cancel()
		case <-ctx.Done():
		}
	}()
	req.Wait = 0
	req.MaxBytes = min(max(req.MaxBytes, 1), streamBatchBytes)
	res, err := s.b.Fetch(ctx, req)
	if err != nil {
		s.writeError(w, r, fetchError(req, err))
		return
	}
	st := newSSEWriter(w, r, s.stream)
	defer st.close()
	if stats != nil {
		stats.started.Add(1)
		stats.add(1)
		counted = true
	}
	h := w.Header()
	h.Set("Content-Type", contentTypeEventStream)
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no") // a proxy in front must not buffer
	w.WriteHeader(http.StatusOK)
	if err := st.flush(); err != nil {
		return
	}
	keepAlive := s.stream.KeepAlive
	for {
		// A token revoked or expired since the stream opened ends it
		// before anything more is sent: within a keep-alive and the
		// verifier's cache.
		if err := s.stillAdmitted(r); err != nil {
			s.streamError(r, st, err)
			return
		}
		if len(res.Records) > 0 {
			if err := st.records(res.Records, enc); err != nil {
				s.streamEnded(r, err)
				return
			}
			req.Offset = res.NextOffset
		} else if time.Since(st.last) >= keepAlive {
			if err := st.comment("keep-alive"); err != nil {
				s.streamEnded(r, err)
				return
			}
		}
		if len(res.Records) == 0 && res.HighWatermark > req.Offset {
			// Nothing returned below the high watermark (cannot happen:
			// a fetch returns a record if one exists): do not spin.
			t := time.NewTimer(100 * time.Millisecond)
			select {
			case <-ctx.Done():
			case <-t.C:
			}
			t.Stop()
		}
		if ctx.Err() != nil {
			s.streamGone(w, r, st)
			return
		}
		// Wait for the next commit, at most until the next keep-alive
		// is due (Broker.Fetch waits only at the high watermark).
		req.Wait = min(max(keepAlive-time.Since(st.last), time.Millisecond), broker.MaxWait)
		res, err = s.fetchRetrying(ctx, req)
		if ctx.Err() != nil {
			s.streamGone(w, r, st)
			return
		}
		if err != nil {
			s.streamError(r, st, fetchError(req, err))
			return
		}
	}
}

// streamRetries is how often a stream repeats a read that failed with a
// retriable error (503: a topic incarnation found stale, a metadata
// store that did not answer) before it ends with that error.
const streamRetries = 3

// fetchRetrying is Broker.Fetch, repeated on a retriable error: a plain
// fetch's client would retry it, and a stream is its own client. A
// deleted topic, for one, first looks stale (retriable), then gone.
func (s *server) fetchRetrying(ctx context.Context, req broker.FetchRequest) (broker.FetchResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := s.b.Fetch(ctx, req)
		if err == nil || attempt > streamRetries || ctx.Err() != nil || !unavailable(err) ||
			errors.Is(err, broker.ErrClosed) {
			return res, err
		}
		t := time.NewTimer(time.Duration(attempt-1) * 50 * time.Millisecond)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

// fetchError names the partition in an out-of-range error, as the fetch
// handler does.
func fetchError(req broker.FetchRequest, err error) error {
	if oor := (*broker.OffsetOutOfRangeError)(nil); errors.As(err, &oor) {
		return fmt.Errorf("topic %q partition %d: %w", req.Topic, req.Partition, err)
	}
	return err
}

// streamGone ends a stream whose context is done: the client went away
// (nothing more to send) or the server is shutting down (an error event,
// so the client knows to come back).
func (s *server) streamGone(w http.ResponseWriter, r *http.Request, st *sseWriter) {
	if r.Context().Err() != nil {
		return // the client went away
	}
	s.streamError(r, st, broker.ErrClosed)
}

// streamError ends a stream with an "error" event: data is the error
// body a plain request would have answered (classify).
func (s *server) streamError(r *http.Request, st *sseWriter, err error) {
	cl := s.classifyLogged(r, err, "stream failed")
	data, jerr := json.Marshal(&cl.body)
	if jerr != nil {
		data = []byte(`{"error":{"code":"internal","message":"internal error"}}`)
	}
	if werr := st.event("error", data); werr != nil {
		s.streamEnded(r, werr)
	}
}

// streamEnded logs (at debug) a stream its client stopped reading.
func (s *server) streamEnded(r *http.Request, err error) {
	s.log.LogAttrs(r.Context(), slog.LevelDebug, "stream write failed",
		slog.String("request_id", requestIDFrom(r.Context())), slog.String("err", err.Error()))
}

// sseWriter writes events to one stream, each batch under a fresh write
// deadline, flushed at once.
type sseWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	stats   *StreamStats
	buf     *bytes.Buffer
	scratch []byte
	// perWrite is the write deadline each write gets: the server's
	// WriteTimeout (serverWT) or StreamConfig.WriteTimeout. Without a
	// server WriteTimeout the deadline is cleared when the stream ends,
	// so the connection's next request is not bound by it.
	perWrite time.Duration
	serverWT bool
	last     time.Time // the last write
}

func newSSEWriter(w http.ResponseWriter, r *http.Request, sc *StreamConfig) *sseWriter {
	st := &sseWriter{w: w, rc: http.NewResponseController(w), stats: sc.Stats, perWrite: sc.WriteTimeout, last: time.Now()}
	if hs, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && hs.WriteTimeout > 0 {
		st.perWrite, st.serverWT = hs.WriteTimeout, true
	}
	st.perWrite = min(st.perWrite, sc.Stall)
	st.buf = bufPool.Get().(*bytes.Buffer)
	st.buf.Reset()
	return st
}

// close gives back the buffer and leaves the connection's write deadline
// as the server would have it.
func (st *sseWriter) close() {
	if st.buf.Cap() <= maxPooledBuffer {
		bufPool.Put(st.buf)
	}
	st.buf = nil
	if !st.serverWT {
		_ = st.rc.SetWriteDeadline(time.Time{})
	}
}

// flush writes what is buffered to the client under a fresh deadline.
func (st *sseWriter) flush() error {
	_ = st.rc.SetWriteDeadline(time.Now().Add(st.perWrite)) // unsupported: no deadline to extend
	if st.buf.Len() > 0 {
		if _, err := st.w.Write(st.buf.Bytes()); err != nil {
			return err
		}
		st.buf.Reset()
	}
	if err := st.rc.Flush(); err != nil {
		return err
	}
	st.last = time.Now()
	return nil
}

// records sends one event per record and flushes once.
func (st *sseWriter) records(recs []broker.Record, enc jsonrec.Encoding) error {
	for i := range recs {
		rec := &recs[i]
		st.scratch = sseRecordJSON(st.scratch[:0], rec, enc)
		b := st.buf
		var num [20]byte
		b.WriteString("id: ")
		b.Write(strconv.AppendInt(num[:0], rec.Offset, 10))
		b.WriteString("\nevent: record\ndata: ")
		b.Write(st.scratch)
		b.WriteString("\n\n")
		if b.Len() >= streamFlushBytes { // write big batches as they grow
			if err := st.flush(); err != nil {
				return err
			}
		}
	}
	if err := st.flush(); err != nil {
		return err
	}
	if st.stats != nil {
		st.stats.events.Add(int64(len(recs)))
	}
	return nil
}

// comment sends a comment line (ignored by every SSE client).
func (st *sseWriter) comment(text string) error {
	st.buf.WriteString(": ")
	st.buf.WriteString(text)
	st.buf.WriteString("\n\n")
	return st.flush()
}

// event sends one event of type name; data is one line.
func (st *sseWriter) event(name string, data []byte) error {
	st.buf.WriteString("event: ")
	st.buf.WriteString(name)
	st.buf.WriteString("\ndata: ")
	st.buf.Write(data)
	st.buf.WriteString("\n\n")
	return st.flush()
}
