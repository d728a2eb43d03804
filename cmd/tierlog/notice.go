package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	tlclient "github.com/tierlog/tierlog/pkg/client"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// clientLogger is the client's logger: with -v every request and retry
// as log lines; on a terminal the client's warnings (retries, offset
// resets) as one short line each, so a wait is never silent; otherwise
// only errors.
func clientLogger(w io.Writer, terminal, verbose bool) *slog.Logger {
	switch {
	case verbose:
		return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
	case terminal:
		return slog.New(&noticeHandler{w: w, mu: &sync.Mutex{}, min: slog.LevelWarn})
	}
	return slog.New(&noticeHandler{w: w, mu: &sync.Mutex{}, min: slog.LevelError})
}

// noticeHandler prints "tierlog: MSG (k=v ...): ERR", without time and
// level: a notice for a person at a terminal.
type noticeHandler struct {
	w     io.Writer
	mu    *sync.Mutex
	min   slog.Level
	attrs []slog.Attr
}

func (h *noticeHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.min }

func (h *noticeHandler) Handle(_ context.Context, r slog.Record) error {
	var kv []string
	var errText string
	add := func(a slog.Attr) bool {
		switch a.Key {
		case "err":
			errText = a.Value.String()
		case "wait":
			kv = append(kv, "next try in "+a.Value.String())
		default:
			kv = append(kv, a.Key+"="+a.Value.String())
		}
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	var b strings.Builder
	b.WriteString("tierlog: ")
	b.WriteString(r.Message)
	if strings.HasSuffix(r.Message, "retrying") {
		b.WriteString("...")
	}
	if len(kv) > 0 {
		b.WriteString(" (" + strings.Join(kv, ", ") + ")")
	}
	if errText != "" {
		b.WriteString(": " + errText)
	}
	b.WriteByte('\n')
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := io.WriteString(h.w, b.String())
	return err
}

func (h *noticeHandler) WithAttrs(as []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), as...)
	return &c
}

func (h *noticeHandler) WithGroup(string) slog.Handler { return h }

// explain rewrites an error for the person reading it: a server that
// cannot be reached at all says where and what to check, and one that
// wants a token says how to give it.
func explain(err error) error {
	var ae *tlclient.Error
	if errors.As(err, &ae) && ae.Code == tlclient.CodeUnauthorized {
		return &hintedError{hint: "the server requires an access token: --token or TIERLOG_TOKEN (docs/auth.md)", err: err}
	}
	if !tlclient.IsUnreachable(err) {
		return err
	}
	where := "the server"
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			where = u.Scheme + "://" + u.Host
		}
	}
	cause := "unreachable"
	var dns *net.DNSError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		cause = "connection refused"
	case errors.As(err, &dns):
		cause = "no such host " + dns.Name
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		cause = "no route to host"
	}
	return &unreachableError{msg: fmt.Sprintf("cannot reach a tierlog server at %s: %s "+
		"(is `tierlog serve` or `make run` running? --url or TIERLOG_URL name another server)", where, cause), err: err}
}

// unreachableError is explain's answer: a short message, the client's
// error (with the request and the dial) in its chain and under -v.
type unreachableError struct {
	msg string
	err error
}

func (e *unreachableError) Error() string { return e.msg }

// hintedError is an error with what to do about it.
type hintedError struct {
	hint string
	err  error
}

func (e *hintedError) Error() string      { return e.err.Error() + " (" + e.hint + ")" }
func (e *hintedError) Unwrap() error      { return e.err }
func (e *unreachableError) Unwrap() error { return e.err }

// goPackagePrefix is a Go package name starting an error's text or a
// wrapped error's, as the packages below the command line write them.
var goPackagePrefix = regexp.MustCompile(`(^|: )(?:client|server|broker|partition|meta|segment|index|tier|compactor|objstore|s3|local|dynamo|wire|api|auth): `)

// cliMessage is err's text for the person at the terminal: without the
// Go package names of the layers it passed through.
func cliMessage(err error) string {
	return goPackagePrefix.ReplaceAllString(err.Error(), "$1")
}
