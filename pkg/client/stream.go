package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// Streaming follow: the fetch route as Server-Sent Events (docs/api.md
// "Streaming fetch", docs/api-extensions.md "Streaming fetch (SSE)").

// DefaultStreamIdleTimeout is how long a Stream waits without a byte from
// the server (which sends a comment at least every 15 s) before it takes
// the connection for dead and reconnects.
const DefaultStreamIdleTimeout = 45 * time.Second

// StreamOptions tunes a Stream. The zero value is the defaults.
type StreamOptions struct {
	// MaxRecords and MaxBytes bound each batch the server reads (and,
	// when polling, each fetch): docs/api.md's max_records and max_bytes.
	MaxRecords, MaxBytes int
	// Wait is how long one fetch long-polls when the server answers
	// JSON instead of a stream. 0 means DefaultWait.
	Wait time.Duration
	// IdleTimeout: see DefaultStreamIdleTimeout (the default).
	IdleTimeout time.Duration
}

// ErrStreamClosed is what Next returns after Close.
var ErrStreamClosed = errors.New("client: stream closed")

// Stream follows one partition from an offset on, record by record, as
// they are committed: over one Server-Sent Events connection where the
// server streams, reconnecting after a dropped connection or a retriable
// error with Last-Event-ID (so nothing is missed or repeated); by
// long-polling fetches where the server answers a plain fetch instead
// (API Gateway). Next is for one goroutine at a time; Close may be called
// from any goroutine.
type Stream struct {
	c         *Client
	topic     string
	partition int
	opt       StreamOptions

	ctx    context.Context // until Close
	cancel context.CancelFunc

	next    int64     // the offset of the next record to hand out
	polling bool      // the server answered JSON: fetch instead
	pending []Message // records read but not handed out yet
	err     error     // a final error: every Next answers it

	conn *sseConn // nil between connections
	// ended counts the retriable error events since the last record: the
	// reconnect after one waits, longer each time.
	ended int
}

// sseConn is one open event stream.
type sseConn struct {
	body   io.ReadCloser
	r      *bufio.Reader
	cancel context.CancelFunc
	idle   *time.Timer // cancels the connection after IdleTimeout of silence
	d      time.Duration
	line   []byte // a line longer than r's buffer
	mu     sync.Mutex
	closed bool
}

// maxEventLine bounds one line of a stream: a record of 1 MiB is at most
// ~6 MiB of JSON (every byte a \u00XX escape).
const maxEventLine = 8 << 20

var errLineTooLong = fmt.Errorf("an event line longer than %d bytes", maxEventLine)

// readLine reads one line without its line ending; the slice is valid
// until the next call. Each line read re-arms the idle timer.
func (sc *sseConn) readLine() ([]byte, error) {
	sc.line = sc.line[:0]
	for {
		frag, err := sc.r.ReadSlice('\n')
		if err == nil || !errors.Is(err, bufio.ErrBufferFull) {
			if err != nil {
				return nil, err
			}
			sc.idle.Reset(sc.d)
			if len(sc.line) == 0 {
				return bytes.TrimRight(frag, "\r\n"), nil
			}
			sc.line = append(sc.line, frag...)
			return bytes.TrimRight(sc.line, "\r\n"), nil
		}
		sc.idle.Reset(sc.d)
		if len(sc.line)+len(frag) > maxEventLine {
			return nil, errLineTooLong
		}
		sc.line = append(sc.line, frag...)
	}
}

func (sc *sseConn) close() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if sc.closed {
		return
	}
	sc.closed = true
	sc.idle.Stop()
	sc.cancel()
	sc.body.Close()
}

// Stream follows partition of topic from offset on with the default
// options. See StreamWith.
func (c *Client) Stream(ctx context.Context, topic string, partition int, offset int64) (*Stream, error) {
	return c.StreamWith(ctx, topic, partition, offset, StreamOptions{})
}

// StreamWith opens a Stream at offset: the first connection is made
// before it returns (retried like any read), so an offset out of range
// (*Error offset_out_of_range), an unknown topic or partition, or damage
// at offset (*DamagedError) is its error. ctx bounds the whole stream:
// when it is done, so is the stream.
func (c *Client) StreamWith(ctx context.Context, topic string, partition int, offset int64, opt StreamOptions) (*Stream, error) {
	if opt.Wait <= 0 {
		opt.Wait = DefaultWait
	}
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = DefaultStreamIdleTimeout
	}
	sctx, cancel := context.WithCancel(ctx)
	s := &Stream{c: c, topic: topic, partition: partition, opt: opt, ctx: sctx, cancel: cancel, next: offset}
	if err := s.connect(sctx); err != nil {
		cancel()
		return nil, err
	}
	return s, nil
}

// Offset is the offset of the next record Next returns.
func (s *Stream) Offset() int64 { return s.next }

// Polling reports whether the server answered a plain fetch instead of
// a stream, so that the Stream long-polls.
func (s *Stream) Polling() bool { return s.polling }

// Close ends the stream and its connection. Next then answers
// ErrStreamClosed.
func (s *Stream) Close() error {
	s.cancel()
	return nil
}

// Next returns the next record, waiting for it to be committed. Errors:
// a *DamagedError (records damaged on the server from Offset on: nothing
// skips them; open a new Stream at DamagedError.Next to go on), an
// *Error the server ended the stream with that is not retriable
// (topic_not_found after a delete, offset_out_of_range after retention
// passed Offset), ctx's error (the stream stays usable: a later Next
// reconnects where it stopped), ErrStreamClosed after Close, or the
// last error once the retries of a reconnect give up.
func (s *Stream) Next(ctx context.Context) (Message, error) {
	for {
		if len(s.pending) > 0 {
			m := s.pending[0]
			s.pending = s.pending[1:]
			return m, nil
		}
		if s.err != nil {
			return Message{}, s.err
		}
		if s.ctx.Err() != nil {
			s.drop()
			return Message{}, s.closedErr()
		}
		if err := ctx.Err(); err != nil {
			return Message{}, err
		}
		if s.polling {
			if err := s.poll(ctx); err != nil {
				return Message{}, err
			}
			continue
		}
		if s.conn == nil {
			if err := s.reconnect(ctx); err != nil {
				return Message{}, err
			}
			continue
		}
		if err := s.read(ctx); err != nil {
			return Message{}, err
		}
	}
}

// closedErr is the error of a stream whose own context is done.
func (s *Stream) closedErr() error {
	if err := context.Cause(s.ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err // the caller's ctx of StreamWith expired
	}
	return ErrStreamClosed
}

// drop closes the connection, if any.
func (s *Stream) drop() {
	if s.conn != nil {
		s.conn.close()
		s.conn = nil
	}
}

// read reads events until it has records, the connection ends (dropped:
// the next Next reconnects), or ctx is done (the connection is closed).
func (s *Stream) read(ctx context.Context) error {
	sc := s.conn
	stop := context.AfterFunc(ctx, sc.close)
	defer stop()
	var ev sseEvent
	for {
		line, err := sc.readLine()
		if errors.Is(err, errLineTooLong) {
			s.drop()
			return fmt.Errorf("client: stream %s/%d: %w", s.topic, s.partition, err)
		}
		if err != nil {
			s.drop()
			if cerr := ctx.Err(); cerr != nil {
				return cerr
			}
			if s.ctx.Err() != nil {
				return s.closedErr()
			}
			s.c.cfg.log.LogAttrs(ctx, slog.LevelDebug, "stream dropped", slog.String("topic", s.topic),
				slog.Int("partition", s.partition), slog.Int64("offset", s.next), slog.String("err", err.Error()))
			return nil // reconnect
		}
		if len(line) == 0 {
			done, err := s.dispatch(&ev)
			ev = sseEvent{}
			if err != nil || done {
				return err
			}
			continue
		}
		if line[0] == ':' {
			continue // a comment: keep-alive
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			ev.event = string(value)
		case "data":
			if ev.data != nil {
				ev.data = append(ev.data, '\n')
			}
			ev.data = append(ev.data, value...) // a copy: line is reused
		case "id":
			ev.id = string(value)
		}
	}
}

type sseEvent struct {
	event, id string
	data      []byte
}

// dispatch handles one event: done when it produced records or ended
// the connection.
func (s *Stream) dispatch(ev *sseEvent) (done bool, err error) {
	switch ev.event {
	case "record":
		m, err := decodeStreamRecord(ev.data, s.partition)
		if err != nil {
			s.drop()
			return true, fmt.Errorf("client: stream %s/%d: event %s: %w", s.topic, s.partition, ev.id, err)
		}
		if m.Offset < s.next {
			return false, nil // already handed out
		}
		s.ended = 0
		s.next = m.Offset + 1
		s.pending = append(s.pending, m)
		return true, nil
	case "error":
		s.drop()
		e := streamError(ev.data)
		if e.IsRetriable() {
			s.ended++
			s.c.cfg.log.LogAttrs(s.ctx, slog.LevelWarn, "stream ended by the server; reconnecting",
				slog.String("topic", s.topic), slog.Int("partition", s.partition), slog.String("err", e.Error()))
			return true, nil
		}
		s.err = asDamaged(e, s.topic, s.partition, s.next)
		return true, s.err
	}
	return false, nil // "message" or another type: not ours
}

// streamError is the *Error an "error" event carries.
func streamError(data []byte) *Error {
	var body struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
		LogStartOffset int64 `json:"log_start_offset"`
		HighWatermark  int64 `json:"high_watermark"`
		NextOffset     int64 `json:"next_offset"`
	}
	if err := json.Unmarshal(data, &body); err != nil || body.Error == nil {
		return &Error{Status: http.StatusInternalServerError, Code: CodeInternal, Message: "unreadable error event: " + cutText(data, 256), Op: "stream"}
	}
	return &Error{Status: statusOf(body.Error.Code), Code: body.Error.Code, Message: body.Error.Message, Op: "stream",
		LogStartOffset: body.LogStartOffset, HighWatermark: body.HighWatermark, NextOffset: body.NextOffset}
}

// decodeStreamRecord decodes one record event's data: a record as a
// fetch answer's records array holds it.
func decodeStreamRecord(data []byte, partition int) (Message, error) {
	var r struct {
		Offset *int64 `json:"offset"`
		recordJSON
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return Message{}, err
	}
	if r.Offset == nil {
		return Message{}, errors.New("record without an offset")
	}
	r.recordJSON.Offset = *r.Offset
	return r.recordJSON.message(partition)
}

// reconnect opens a new connection after the last one dropped, retried
// per the client's backoff.
func (s *Stream) reconnect(ctx context.Context) error {
	cctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	if s.ended > 0 {
		// The server ended the stream with a retriable error (shutting
		// down, its metadata store unavailable): do not come straight back.
		d := min(s.c.cfg.backoff.Initial<<min(s.ended-1, 10), s.c.cfg.backoff.Max)
		t := time.NewTimer(d)
		select {
		case <-cctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
	err := s.connect(cctx)
	if err == nil {
		return nil
	}
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	if s.ctx.Err() != nil {
		return s.closedErr()
	}
	if !IsRetriable(err) {
		s.err = err
	}
	return err
}

// connect makes the first connection (or the next): retried like a read.
func (s *Stream) connect(ctx context.Context) error {
	attempt := func() (*response, error) { return nil, s.open(ctx) }
	var err error
	if s.c.cfg.backoff.MaxElapsed <= 0 {
		_, err = attempt()
	} else {
		_, err = retry(ctx, s.c.cfg.backoff, s.c.cfg.backoff.MaxElapsed, s.c.cfg.log, s.c.giveUp, attempt)
	}
	return asDamaged(err, s.topic, s.partition, s.next)
}

// open sends one streaming fetch from s.next. An event stream becomes
// s.conn; a plain fetch answer (a server that does not stream) turns the
// Stream to polling, its records pending.
func (s *Stream) open(ctx context.Context) error {
	q := url.Values{"offset": {strconv.FormatInt(s.next, 10)}}
	if s.opt.MaxRecords > 0 {
		q.Set("max_records", strconv.Itoa(s.opt.MaxRecords))
	}
	if s.opt.MaxBytes > 0 {
		q.Set("max_bytes", strconv.Itoa(s.opt.MaxBytes))
	}
	path := partitionPath(s.topic, s.partition) + "/records"
	op := "GET " + path
	// The connection lives with the Stream (s.ctx), not with ctx, which
	// only bounds the making of it.
	cctx, cancel := context.WithCancel(s.ctx)
	stopCtx := context.AfterFunc(ctx, cancel)
	defer stopCtx()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, s.c.base+path+"?"+q.Encode(), nil)
	if err != nil {
		cancel()
		return fmt.Errorf("client: %s: %w", op, err)
	}
	req.Header.Set("Accept", "text/event-stream")
	if s.next > 0 {
		// The offset says the same; an SSE proxy or client that only
		// keeps Last-Event-ID gets it right too.
		req.Header.Set("Last-Event-ID", strconv.FormatInt(s.next-1, 10))
	}
	req.Header.Set("User-Agent", s.c.cfg.userAgent)
	s.c.authorize(req)
	for _, h := range s.c.cfg.hooks {
		if h.BeforeRequest != nil {
			h.BeforeRequest(req)
		}
	}
	if s.c.signer != nil {
		if err := s.c.sign(ctx, req, nil); err != nil {
			cancel()
			return err
		}
	}
	res, err := s.c.cfg.hc.Do(req)
	if res != nil {
		s.c.answered.Store(true)
	}
	if err != nil {
		cancel()
		if re := (*redirectError)(nil); errors.As(err, &re) {
			return &Error{Status: re.status, Message: re.Error(), Op: op}
		}
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("client: %s: %w", op, cerr)
		}
		return &transportError{op: op, base: s.c.base, err: err}
	}
	mt, _, _ := mime.ParseMediaType(res.Header.Get("Content-Type"))
	if res.StatusCode == http.StatusOK && mt == "text/event-stream" {
		if !stopCtx() { // ctx ended just now
			cancel()
			res.Body.Close()
			return fmt.Errorf("client: %s: %w", op, ctx.Err())
		}
		sc := &sseConn{body: res.Body, r: bufio.NewReaderSize(res.Body, 64<<10), cancel: cancel, d: s.opt.IdleTimeout}
		sc.idle = time.AfterFunc(sc.d, sc.close)
		s.conn = sc
		return nil
	}
	defer cancel()
	defer res.Body.Close()
	data, err := io.ReadAll(io.LimitReader(res.Body, maxResponseBytes+1))
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return fmt.Errorf("client: %s: %w", op, cerr)
		}
		return &transportError{op: op, base: s.c.base, err: fmt.Errorf("read answer: %w", err)}
	}
	if res.StatusCode/100 != 2 {
		return parseError(op, res, data)
	}
	if len(data) > maxResponseBytes {
		return fmt.Errorf("client: %s: answer larger than %d bytes", op, maxResponseBytes)
	}
	// A plain fetch: the server does not stream (API Gateway).
	fr, err := decodeFetch(&response{status: res.StatusCode, header: res.Header, body: data}, s.partition, op)
	if err != nil {
		return err
	}
	if !s.polling {
		s.c.cfg.log.LogAttrs(ctx, slog.LevelDebug, "server does not stream: polling", slog.String("topic", s.topic),
			slog.Int("partition", s.partition))
	}
	s.polling = true
	s.take(fr)
	return nil
}

// take queues a fetch's records from s.next on.
func (s *Stream) take(fr *FetchResult) {
	for _, m := range fr.Messages {
		if m.Offset >= s.next {
			s.pending = append(s.pending, m)
			s.next = m.Offset + 1
		}
	}
}

// poll is one long-polling fetch, for a server that does not stream.
func (s *Stream) poll(ctx context.Context) error {
	cctx, cancel := context.WithCancel(s.ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	fr, err := s.c.Fetch(cctx, s.topic, s.partition, s.next,
		FetchOptions{MaxRecords: s.opt.MaxRecords, MaxBytes: s.opt.MaxBytes, Wait: s.opt.Wait})
	if err != nil {
		if cerr := ctx.Err(); cerr != nil {
			return cerr
		}
		if s.ctx.Err() != nil {
			return s.closedErr()
		}
		if !IsRetriable(err) {
			s.err = err
		}
		return err
	}
	s.take(fr)
	return nil
}
