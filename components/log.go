package components

import (
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sluice-server/sluice/cache"
	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

func init() {
	Register(Registration{
		Name: "log", Kind: KindPipe, Scalar: "file", Paths: []string{"file"},
		Example: `log: {file: ./access.log, format: json}`,
	}, func(o LogOptions, ctx Context) (pipe.Component, error) {
		// A master's worker does not rotate: the master does (LogRotator).
		o.rotatedElsewhere = ctx.Workers != nil
		return NewLog(o)
	})
}

// LogOptions configures NewLog. In a config file a scalar argument sets
// File: `log: /var/log/sluice/access.log`.
type LogOptions struct {
	// File is the path of the log file, opened for appending (created
	// with mode 0644 if missing). "", "-" or "stdout": standard output;
	// "stderr": standard error.
	File string `yaml:"file"`

	// Format is "combined" (the default; Apache's and nginx's combined
	// log format), "common" (the Common Log Format), "json" (one JSON
	// object per line), or a line of one's own: text with fields named in
	// braces, "{remote} {method} {uri} {status} {duration_ms}
	// \"{req.User-Agent}\"" ({{ and }} for literal braces; LogFields
	// lists the names).
	Format string `yaml:"format"`

	// Fields, with Format "json", choose the members of each JSON line,
	// in order: each is a field of LogFields, its name the member's key
	// (["time", "remote", "status", "req.X-Request-Id"]). Empty: the json
	// format's own members.
	Fields []string `yaml:"fields"`

	// LogRotation rotates the file by size (max_size, max_age,
	// max_backups, compress), in this process or, in a master's workers,
	// in the master (see LogRotator).
	LogRotation `yaml:",inline"`

	// Buffer is how many lines may wait for the writer. When it is full,
	// lines are dropped and counted (see Log.Dropped) rather than slowing
	// requests down. Default 4096.
	Buffer int `yaml:"buffer"`

	// TrustedProxies lists the reverse proxies (CIDRs or addresses) whose
	// client-address header is believed for the logged client address.
	// Empty: the TCP peer is the client and no header is read.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header trusted proxies put the client address
	// in: "X-Forwarded-For" (the default) or "Forwarded" (RFC 7239), read
	// from the right, skipping trusted proxies.
	ClientIPHeader string `yaml:"client_ip_header"`

	// CacheStatus appends to each common or combined line what a cache
	// after the log did with the request (a word: HIT, STALE,
	// REVALIDATED, COLLAPSED, MISS, PASS; "-" when no cache saw it). The
	// json format has it as "cache" whenever a cache saw the request.
	CacheStatus bool `yaml:"cache_status"`

	// Replace, for a Log in a route's pipeline, keeps the requests it
	// records out of the server-wide access log (a Log with ServerWide):
	// the route's log replaces it, as an access_log directive in an nginx
	// location replaces the server's. By default a route's log adds to
	// the server-wide one: both record the request.
	Replace bool `yaml:"replace"`

	// Logger receives the log's own errors (failed writes and reopens).
	// Nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`

	// ServerWide makes the Log the server's access log for every route,
	// as a config file's top-level access_log is: placed before the
	// router, it records each request, except those a Log of the
	// request's route with Replace records. Not an option of the
	// component in a pipeline.
	ServerWide bool `yaml:"-"`

	rotatedElsewhere bool // another process rotates the file: only reopen it
}

// Log is an access log component: one line per request, written by a
// goroutine of its own so that requests never wait for the disk.
//
// NewLog returns a *Log as a pipe.Component. Place it first in a
// pipeline to log every request, including those a later pipe refuses
// (401, 403, 429): a Pipe that answers stops the pipeline, so a log placed
// after it never sees those requests. Log counts the body bytes that pass
// its place in the pipeline: before later filters (compress) when it
// comes first — the size of the content, not of what went on the wire —
// and after them when it comes last.
//
// # Formats
//
// common:   %h %l %u %t "%r" %>s %b, as Apache's and nginx's:
//
//	192.0.2.7 - alice [10/Oct/2000:13:55:36 -0700] "GET /a.gif HTTP/1.1" 200 2326
//
// combined: common followed by "%{Referer}i" "%{User-Agent}i", each "-"
// when the request has none.
//
// With CacheStatus, either ends with the cache status of the request
// (cache.StatusKey: HIT, STALE, REVALIDATED, COLLAPSED, MISS, PASS), or
// "-" when no cache saw it.
//
// json: {"time","remote","user","method","uri","proto","host","status",
// "bytes","referer","user_agent","duration_ms"}, one object per line;
// what the request did not send is "". A request a cache saw has "cache"
// too, its cache status.
//
// A format of one's own (LogOptions.Format with fields in braces, or
// json with LogOptions.Fields) names the fields of LogFields; the
// presets are such formats: common is
// `{remote} - {user} [{time}] "{request}" {status} {bytes}`. It is
// compiled once, by NewLog, and a line costs no allocation (a transport
// asked for upstream_time_ms spends one on formatting it). In a text
// format of one's own, a value that is missing or empty is "-", and
// quotes, backslashes, control and non-ASCII bytes are escaped as nginx
// escapes them (\xHH); in JSON every value is a JSON string (or number).
//
// The time is the local time the request arrived, in the format of
// Apache's %t. The user is the name in Basic credentials, if any — as
// with Apache, whether or not they were accepted. In common and combined,
// quotes, backslashes, control and non-ASCII bytes of request fields are
// escaped as Apache does (\", \\, \n, \xhh); json escapes as JSON does,
// with invalid UTF-8 replaced by U+FFFD. No byte a client sent reaches
// the file unescaped.
//
// # Server-wide
//
// A Log made with ServerWide set runs before the router (config.Config's
// Handler places a config file's access_log so) and records every
// request, those no route matches included. A Log in a route's pipeline
// records its requests as well, unless made with Replace: then it records
// them alone, as an access_log directive in an nginx location replaces
// the server's. A request stopped before its route's log runs (a 401
// from a basic_auth placed first) is recorded by the server-wide Log, so
// none goes unrecorded.
//
// # Requests the engine refuses
//
// A request the engine answers itself (a malformed or oversized head, an
// unknown method, a head that timed out: 400, 408, 413, 414, 417, 431,
// 501, 505) never reaches a pipeline. Refused logs it when set as the
// server's engine.Server.OnRefused (sluice serve does this; see
// docs/config.md for which log gets them): its raw request line,
// escaped, stands for the request, and what did not arrive is "-" (in
// json, "").
//
// # Buffering and rotation
//
// Lines go through a bounded queue (Buffer) to a writer goroutine, which
// writes them in batches of whole lines (so several logs appending to one
// file never interleave within a line) whenever the queue runs empty.
// When the queue is full, lines are dropped and counted. Reopen makes the
// writer reopen the file by its path, for logrotate: rename the file,
// then call Reopen — or send the signal given to ReopenOnSignal (the
// command line uses SIGUSR1) — and new lines go to a new file. Close
// writes what is queued and stops the writer.
//
// A Log is safe for concurrent use.
type Log struct {
	format     *logFormat
	serverWide bool
	replace    bool // Replace
	client     *clientaddr.Resolver
	path       string // "" for standard output or error
	log        *slog.Logger

	file      *logFile     // the file, nil for a stream
	use       *LogRotation // this Log's use of file (openSharedLog)
	rotation  LogRotation  // as configured
	lines     chan *[]byte
	reopenReq chan chan error
	chownReq  chan logChown
	syncReq   chan chan struct{}
	quit      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
	closed    atomic.Bool
	dropped   atomic.Uint64

	out     io.Writer // the writer goroutine's: file, or the stream
	failing bool      // the writer goroutine's: the last write failed

	// now is the clock; tests replace it.
	now func() time.Time
}

var _ pipe.Component = (*Log)(nil)

// logBatchMax is how many bytes the writer gathers before writing.
const logBatchMax = 64 << 10

// NewLog opens the log file and starts the writer goroutine. The
// returned Component is a *Log; the caller should Close it when the
// pipeline is retired, and may call ReopenOnSignal on it.
func NewLog(opts LogOptions) (pipe.Component, error) {
	l, err := newLog(opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func newLog(opts LogOptions) (*Log, error) {
	l := &Log{now: time.Now, log: cmp.Or(opts.Logger, slog.Default()), serverWide: opts.ServerWide, replace: opts.Replace}
	if opts.ServerWide && opts.Replace {
		return nil, errors.New("log: replace is for a route's log, which it makes replace the server-wide access_log for the route's requests: remove it here")
	}
	f, err := compileLogFormat(opts.Format, opts.Fields, opts.CacheStatus)
	if err != nil {
		return nil, err
	}
	l.format = f
	if opts.Buffer < 0 {
		return nil, fmt.Errorf("log: buffer must not be negative, not %d", opts.Buffer)
	}
	if opts.Buffer == 0 {
		opts.Buffer = 4096
	}
	ci, err := clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader)
	if err != nil {
		return nil, fmt.Errorf("log: %w", err)
	}
	l.client = ci
	switch opts.File {
	case "", "-", "stdout":
		l.out = os.Stdout
	case "stderr":
		l.out = os.Stderr
	default:
		l.path = opts.File
	}
	if err := opts.LogRotation.check(l.path); err != nil {
		return nil, err
	}
	l.rotation = opts.LogRotation
	if l.path != "" {
		if l.file, l.use, err = openSharedLog(l.path, opts.LogRotation, !opts.rotatedElsewhere); err != nil {
			return nil, fmt.Errorf("log: %w", err)
		}
		l.out = l.file
	}
	l.lines = make(chan *[]byte, opts.Buffer)
	l.reopenReq = make(chan chan error)
	l.chownReq = make(chan logChown)
	l.syncReq = make(chan chan struct{})
	l.quit = make(chan struct{})
	l.done = make(chan struct{})
	go l.run()
	return l, nil
}

func openLogFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// The per-request value (pipe.Conn.SetValue) by which a server-wide Log
// learns that a route's Log records the request.
const (
	logMarkKey    = "components.log"
	logMarkServer = "server" // a server-wide Log will record it
	logMarkRoute  = "route"  // a route's Log with Replace records it: the server-wide one does not
)

// Handle notes the request's arrival and registers the filter that
// writes the line when the content phase ends.
func (l *Log) Handle(c *pipe.Conn) bool {
	if l.serverWide {
		c.SetValue(logMarkKey, logMarkServer)
	} else if l.replace && c.Value(logMarkKey) == logMarkServer {
		c.SetValue(logMarkKey, logMarkRoute)
	}
	if l.format.upstreamTime && c.Value(upstream.TimeKey) == "" {
		c.SetValue(upstream.TimeKey, upstream.TimeAsked)
	}
	rec := logRecPool.Get().(*logRec)
	rec.l, rec.start, rec.n = l, l.now(), 0
	c.AddFilter(rec.filterFn)
	return true
}

// Dropped returns how many lines have been dropped because the queue was
// full (or the Log closed).
func (l *Log) Dropped() uint64 { return l.dropped.Load() }

// Reopen makes the writer write what is queued to the current file, then
// reopen the file by its path (creating it if it was moved away). It
// returns when that is done. If the file cannot be opened, the writer
// keeps the old one and Reopen returns the error. For standard output
// and standard error it does nothing.
func (l *Log) Reopen() error {
	reply := make(chan error, 1)
	select {
	case l.reopenReq <- reply:
		return <-reply
	case <-l.done:
		return errors.New("log: closed")
	}
}

// logChown asks the writer goroutine to change the file's owner.
type logChown struct {
	uid, gid int
	reply    chan error
}

// Chown makes uid and gid the owner of the log file (os.File.Chown), so
// that a process that switches to that user after opening the file (see
// package daemon) can still reopen it; for standard output and standard
// error it does nothing. A file Reopen creates later belongs to whoever
// runs then.
func (l *Log) Chown(uid, gid int) error {
	reply := make(chan error, 1)
	select {
	case l.chownReq <- logChown{uid, gid, reply}:
		return <-reply
	case <-l.done:
		return errors.New("log: closed")
	}
}

// Sync returns once every line logged before the call has been written
// to the file (or dropped).
func (l *Log) Sync() {
	reply := make(chan struct{}, 1)
	select {
	case l.syncReq <- reply:
		<-reply
	case <-l.done:
	}
}

// Close writes what is queued, stops the writer and closes the file.
// Requests logged after Close are dropped. Close is idempotent.
func (l *Log) Close() error {
	l.closeOnce.Do(func() {
		l.closed.Store(true)
		close(l.quit)
	})
	<-l.done
	return nil
}

// ReopenOnSignal calls Reopen whenever the process receives one of sigs
// (SIGUSR1 if none are given, on Unix), until the returned stop function
// is called. The command line calls it; a program embedding Sluice
// decides for itself, so NewLog does not touch signal handling.
func (l *Log) ReopenOnSignal(sigs ...os.Signal) (stop func()) {
	if len(sigs) == 0 {
		sigs = logReopenSignals
	}
	if len(sigs) == 0 {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	quit := make(chan struct{})
	signal.Notify(ch, sigs...)
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-ch:
				if err := l.Reopen(); err != nil {
					l.log.Error("log: reopen failed", "file", l.path, "err", err)
				}
			case <-quit:
				return
			}
		}
	})
	var once sync.Once
	return func() {
		once.Do(func() {
			signal.Stop(ch)
			close(quit)
			wg.Wait()
		})
	}
}

// run is the writer goroutine.
func (l *Log) run() {
	defer close(l.done)
	batch := make([]byte, 0, logBatchMax)
	for {
		select {
		case b := <-l.lines:
			// Gather what else is queued, then write: one write per burst.
			batch = l.take(batch, b)
			for len(batch) < logBatchMax && len(l.lines) > 0 {
				batch = l.take(batch, <-l.lines)
			}
			l.write(batch)
		case reply := <-l.syncReq:
			l.writeQueued(batch)
			reply <- struct{}{}
		case reply := <-l.reopenReq:
			l.writeQueued(batch)
			reply <- l.reopenFile()
		case r := <-l.chownReq:
			var err error
			if l.file != nil {
				err = l.file.Chown(r.uid, r.gid)
			}
			r.reply <- err
		case <-l.quit:
			l.writeQueued(batch)
			if l.file != nil {
				l.file.release(l.use)
			}
			return
		}
		batch = batch[:0]
	}
}

// take appends a queued line to batch and recycles its buffer.
func (l *Log) take(batch []byte, b *[]byte) []byte {
	batch = append(batch, *b...)
	if cap(*b) <= 4096 {
		*b = (*b)[:0]
		logBufPool.Put(b)
	}
	return batch
}

// writeQueued writes the lines queued now (those logged before a Sync,
// Reopen or Close), using batch as the buffer.
func (l *Log) writeQueued(batch []byte) {
	for n := len(l.lines); n > 0; n-- {
		batch = l.take(batch, <-l.lines)
		if len(batch) >= logBatchMax {
			l.write(batch)
			batch = batch[:0]
		}
	}
	l.write(batch)
}

func (l *Log) write(batch []byte) {
	if len(batch) == 0 {
		return
	}
	if _, err := l.out.Write(batch); err != nil {
		if !l.failing {
			l.log.Error("log: write failed; lines are being lost", "file", l.path, "err", err)
		}
		l.failing = true
		return
	}
	l.failing = false
}

func (l *Log) reopenFile() error {
	if l.file == nil {
		return nil
	}
	if err := l.file.Reopen(); err != nil {
		return fmt.Errorf("log: %w", err)
	}
	return nil
}

// Rotation returns the file the Log writes and how it is rotated, for a
// master that rotates its workers' files (LogRotator); ok is false for a
// Log that writes a stream or rotates nothing.
func (l *Log) Rotation() (file string, r LogRotation, ok bool) {
	if l.file == nil || l.rotation.MaxSize == 0 {
		return "", LogRotation{}, false
	}
	return l.file.path, l.rotation, true
}

// Refused writes the line of a request the engine refused before any
// handler saw it (see engine.Server.OnRefused), in the log's format: the
// raw request line, escaped, stands for the request ("%r"); in json, a
// "request" member carries it, and method, uri and proto are empty when
// the request line did not parse. Refused copies what it needs before it
// returns and does not block, so it may be called as OnRefused.
func (l *Log) Refused(rf *engine.Refusal) {
	l.emit(rf.Request, rf, nil, rf.Status, l.now(), rf.BodyBytes, "")
}

// emit formats the line of a finished request (c its Conn), or of a
// refused one (rf not nil, c nil), and queues it.
func (l *Log) emit(r *engine.Request, rf *engine.Refusal, c *pipe.Conn, status int, start time.Time, n int64, cacheStatus string) {
	if l.closed.Load() {
		l.dropped.Add(1)
		return
	}
	e := logEntry{l: l, r: r, rf: rf, c: c, status: status, start: start, n: n, cacheStatus: cacheStatus}
	e.now = l.now()
	bp := logBufPool.Get().(*[]byte)
	line := l.format.append((*bp)[:0], &e)
	line = append(line, '\n')
	*bp = line
	select {
	case l.lines <- bp:
	default:
		l.dropped.Add(1)
		*bp = (*bp)[:0]
		logBufPool.Put(bp)
	}
}

// appendLogAddr appends a client address, or "-" when there is none.
func appendLogAddr(b []byte, a netip.Addr) []byte {
	if !a.IsValid() {
		return append(b, '-')
	}
	return a.AppendTo(b)
}

// logUser returns the user name of Basic credentials, or nil.
func logUser(r *engine.Request) []byte {
	v := r.Header("Authorization")
	if len(v) < 7 || !strings.EqualFold(string(v[:6]), "basic ") {
		return nil
	}
	enc := v[6:]
	for len(enc) > 0 && enc[0] == ' ' {
		enc = enc[1:]
	}
	if len(enc) > 1024 {
		return nil
	}
	var buf [768]byte
	n, err := base64.StdEncoding.Decode(buf[:], enc)
	if err != nil {
		return nil
	}
	for i, ch := range buf[:n] {
		if ch == ':' {
			return append([]byte(nil), buf[:i]...)
		}
	}
	return nil
}

// appendLogField appends s escaped as Apache escapes log items.
func appendLogField[T ~string | ~[]byte](b []byte, s T) []byte {
	const hex = "0123456789abcdef"
	for len(s) > 0 {
		i := logSafeRun(s)
		b = append(b, s[:i]...)
		if i == len(s) {
			break
		}
		ch := s[i]
		s = s[i+1:]
		switch {
		case ch == '"' || ch == '\\':
			b = append(b, '\\', ch)
		case ch == '\n':
			b = append(b, `\n`...)
		case ch == '\r':
			b = append(b, `\r`...)
		case ch == '\t':
			b = append(b, `\t`...)
		default:
			b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
		}
	}
	return b
}

// appendLogWord appends s escaped as Apache does (apache) or as nginx
// does, for a field a text format may leave unquoted (the user name): a
// space is escaped too ("\x20"), so that the field stays one and cannot
// shift the columns after it.
func appendLogWord[T ~string | ~[]byte](b []byte, s T, apache bool) []byte {
	for {
		i := 0
		for i < len(s) && s[i] != ' ' {
			i++
		}
		if apache {
			b = appendLogField(b, s[:i])
		} else {
			b = appendNginxField(b, s[:i])
		}
		if i == len(s) {
			return b
		}
		b = append(b, `\x20`...)
		s = s[i+1:]
	}
}

// logSafeRun returns the length of the prefix of s that needs no escaping
// in either format: printable ASCII other than '"' and '\\'.
func logSafeRun[T ~string | ~[]byte](s T) int {
	for i := 0; i < len(s); i++ {
		if ch := s[i]; ch < 0x20 || ch >= 0x7f || ch == '"' || ch == '\\' {
			return i
		}
	}
	return len(s)
}

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes
// U+FFFD.
func appendJSONString[T ~string | ~[]byte](b []byte, s T) []byte {
	b = append(b, '"')
	b = appendJSONBody(b, s)
	return append(b, '"')
}

// appendJSONBody appends s escaped as the inside of a JSON string.
func appendJSONBody[T ~string | ~[]byte](b []byte, s T) []byte {
	const hex = "0123456789abcdef"
	for i := 0; i < len(s); {
		if n := logSafeRun(s[i:]); n > 0 {
			b = append(b, s[i:i+n]...)
			i += n
			continue
		}
		ch := s[i]
		if ch < utf8.RuneSelf {
			switch {
			case ch == '"' || ch == '\\':
				b = append(b, '\\', ch)
			case ch == '\n':
				b = append(b, `\n`...)
			case ch == '\r':
				b = append(b, `\r`...)
			case ch == '\t':
				b = append(b, `\t`...)
			case ch < 0x20 || ch == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[ch>>4], hex[ch&15])
			default:
				b = append(b, ch)
			}
			i++
			continue
		}
		var rb [utf8.UTFMax]byte
		k := copy(rb[:], s[i:])
		r, size := utf8.DecodeRune(rb[:k])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return b
}

// logRec follows one request from Handle to the end of its content; its
// writer counts the body bytes. Recycled through logRecPool.
type logRec struct {
	l     *Log
	c     *pipe.Conn
	next  pipe.Writer
	start time.Time
	n     int64

	filterFn pipe.Filter // rec.filter, bound once
	wrapFn   pipe.Wrap   // rec.wrap, bound once
}

var logRecPool sync.Pool // of *logRec; New is set by init (filter puts recs back)

func init() {
	logRecPool.New = func() any {
		rec := new(logRec)
		rec.filterFn, rec.wrapFn = rec.filter, rec.wrap
		return rec
	}
}

var logBufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 256)
	return &b
}}

func (rec *logRec) filter(c *pipe.Conn) pipe.Wrap {
	if rec.l.serverWide && c.Value(logMarkKey) == logMarkRoute {
		rec.recycle() // the route's log records this request
		return nil
	}
	rec.c = c
	return rec.wrapFn
}

func (rec *logRec) wrap(next pipe.Writer) pipe.Writer {
	rec.next = next
	return rec
}

func (rec *logRec) Write(p []byte) (int, error) {
	n, err := rec.next.Write(p)
	rec.n += int64(n)
	return n, err
}

func (rec *logRec) Flush() error { return rec.next.Flush() }

// Close logs the request: the content phase is over and the status final.
func (rec *logRec) Close() error {
	rec.l.emit(rec.c.Request, nil, rec.c, rec.c.Status(), rec.start, rec.n, rec.c.Value(cache.StatusKey))
	rec.recycle()
	return nil
}

func (rec *logRec) recycle() {
	rec.l, rec.c, rec.next = nil, nil, nil
	logRecPool.Put(rec)
}

// WriteBuffers implements pipe.BuffersWriter: the buffers go on to the
// writers beneath together, and are counted.
func (rec *logRec) WriteBuffers(p [][]byte) (int64, error) {
	n, err := pipe.WriteBuffers(rec.next, p)
	rec.n += n
	return n, err
}

// SendFile implements pipe.FileWriter: it sends n bytes of f through the
// writers beneath by reference and counts them, so files served under a
// log keep going out with sendfile(2).
func (rec *logRec) SendFile(f *os.File, offset, n int64) error {
	err := pipe.SendFile(rec.next, f, offset, n)
	if err == nil {
		rec.n += n
	}
	return err
}
