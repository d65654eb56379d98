package cgi

import (
	"bufio"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/pipe"
)

// bufs recycles the buffers stdout is read into.
var bufs = sync.Pool{New: func() any { b := make([]byte, chunkSize); return &b }}

// run is one program run.
type run struct {
	g          *Gateway
	c          *pipe.Conn
	scriptName string
	id         slog.Attr // the request's ID, for the log lines about it (pipe.Conn.RequestIDAttr)
	cmd        *exec.Cmd

	stdinW  *os.File // nil without a body, or when a spool file is stdin
	stdoutR *os.File
	stderrR *os.File

	fed     chan struct{} // closed once nothing reads the request body any more
	bodyErr error         // the feeder's read error, set before fed closes
	unread  bool          // the feeder stopped before the body's end; set before fed closes
	feeding chan struct{} // closed when the memory feeder is done with the spool
	chunks  chan []byte   // stdout, in pooled buffers
	quit    chan struct{} // tells the stdout reader to stop
	logged  chan struct{} // closed when stderr reaches EOF

	stop     chan struct{} // closed by the first kill, or by end: the reaper may go on
	stopOnce sync.Once
	leader   chan struct{} // closed when the program has exited (not yet reaped)
	exited   chan struct{} // closed once the program is reaped and uncounted
	waitErr  error         // cmd.Wait's, set before exited closes

	timer      *time.Timer
	timedOut   atomic.Bool
	clientGone atomic.Bool
	closing    atomic.Bool // killed by Close
	mu         sync.Mutex  // guards reaped against the kills
	reaped     bool
	killed     bool // the server killed the group before it finished

	added []string // header fields set from the program's header
	wrote bool     // something was written or flushed to w
}

// serve is the content phase: run the program and send its response.
func (g *Gateway) serve(c *pipe.Conn, w pipe.Writer, t target) error {
	r := c.Request
	var in input
	body, length, spool, err := ReadBody(r, g.maxBody)
	switch {
	case BodyTooLarge(err):
		return Answer(c, w, http.StatusRequestEntityTooLarge, "request body too large for CGI")
	case err != nil:
		return err // the client went away or was too slow
	case spool != nil: // chunked: RFC 3875 needs CONTENT_LENGTH, so it was read whole
		defer spool.Close()
		in.spool = spool
	case body != nil:
		in.stream = io.LimitReader(body, length)
	}

	if status, msg := g.admit(); status != 0 {
		c.Header().Set("Retry-After", "1")
		return Answer(c, w, status, msg)
	}
	x := &run{g: g, c: c, scriptName: t.scriptName, id: c.RequestIDAttr()}
	if err := x.start(t.script, g.environ(r, c.Value("user"), t, length), in); err != nil {
		g.done(x)
		g.log.Error("cgi: cannot run program", "script", t.scriptName, "err", err, x.id)
		return Answer(c, w, http.StatusInternalServerError, "cannot run CGI program")
	}
	err = x.respond(w)
	x.end()
	return err
}

// input is what a program reads on its stdin: nothing, the request
// body read from the connection while the program runs, or a spooled one.
type input struct {
	stream io.Reader
	spool  *Spool
}

// start starts the program and the goroutines that feed its stdin, read
// its stdout and stderr, reap it, and kill it when the client goes.
func (x *run) start(script string, env []string, in input) error {
	var files []*os.File // the child's ends, closed once it has them
	defer func() {
		for _, f := range files {
			f.Close()
		}
	}()
	x.cmd = &exec.Cmd{Path: script, Args: []string{script}, Env: env, Dir: filepath.Dir(script)}
	sysProcAttr(x.cmd)
	switch {
	case in.spool != nil && in.spool.file != nil:
		x.cmd.Stdin = in.spool.file // the program reads the file itself
	case in.spool != nil || in.stream != nil:
		r, w, err := os.Pipe()
		if err != nil {
			return err
		}
		files = append(files, r)
		x.cmd.Stdin, x.stdinW = r, w
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		x.closeParentEnds()
		return err
	}
	files = append(files, outW)
	x.cmd.Stdout, x.stdoutR = outW, outR
	errR, errW, err := os.Pipe()
	if err != nil {
		x.closeParentEnds()
		return err
	}
	files = append(files, errW)
	x.cmd.Stderr, x.stderrR = errW, errR
	if err := startProgram(x.cmd); err != nil {
		x.closeParentEnds()
		return err
	}

	x.stop = make(chan struct{})
	x.leader = make(chan struct{})
	x.exited = make(chan struct{})
	x.timer = time.AfterFunc(x.g.timeout, func() { x.killFor(&x.timedOut) })
	go x.reap()
	if !x.g.started(x) {
		x.killFor(&x.closing)
	}
	if gone := x.c.Gone(); gone != nil {
		go func() {
			select {
			case <-gone:
				x.killFor(&x.clientGone)
			case <-x.exited:
			}
		}()
	}

	x.fed = make(chan struct{})
	x.feeding = make(chan struct{})
	switch {
	case in.stream != nil:
		close(x.feeding)
		go x.feed(in.stream)
	case in.spool != nil && in.spool.file == nil:
		close(x.fed) // the connection is not read: output need not wait
		go x.feedMem(in.spool.mem)
	default:
		close(x.fed)
		close(x.feeding)
	}
	x.chunks = make(chan []byte, 4)
	x.quit = make(chan struct{})
	go x.readStdout()
	x.logged = make(chan struct{})
	go x.logStderr()
	return nil
}

func (x *run) closeParentEnds() {
	for _, f := range []*os.File{x.stdinW, x.stdoutR, x.stderrR} {
		if f != nil {
			f.Close()
		}
	}
}

// kill kills the program's process group, unless it has been reaped (its
// group id could then belong to someone else), and lets the reaper go on.
func (x *run) kill() { x.killFor(nil) }

// killFor is kill for a reason the response tells (see stopped): why is
// set if the group was killed.
func (x *run) killFor(why *atomic.Bool) {
	x.mu.Lock()
	if !x.reaped {
		if why != nil {
			why.Store(true)
		}
		x.killed = true
		killGroup(x.cmd.Process)
	}
	x.mu.Unlock()
	x.stopOnce.Do(func() { close(x.stop) })
}

// reap waits for the program to exit and, once it was killed or its
// response is done (stop), kills what is left of its group and reaps it,
// so that a killed program is reaped at once, whatever the request's
// goroutine is still waiting for (a request body still arriving).
func (x *run) reap() {
	waitExited(x.cmd.Process) // without reaping: the group id stays ours
	close(x.leader)
	<-x.stop
	x.mu.Lock()
	killGroup(x.cmd.Process) // whatever the program left running
	x.reaped = true
	x.mu.Unlock()
	x.timer.Stop()
	x.waitErr = x.cmd.Wait()
	x.g.done(x)
	close(x.exited)
}

// feed copies the request body from the connection to the program's
// stdin. A program may stop reading it (a broken pipe is not an error):
// the rest of the body is then read and dropped, so the client, still
// sending, gets the response on a connection that stays usable. Once the
// program is killed (its timeout, say) feed stops reading, so that the
// answer need not wait for the rest of the body; the connection then
// closes. A failing body kills the program.
func (x *run) feed(body io.Reader) {
	defer close(x.fed)
	buf := bufs.Get().(*[]byte)
	defer bufs.Put(buf)
	out := x.stdinW
	for {
		select {
		case <-x.stop:
			x.unread = true
			x.stdinW.Close()
			return
		default:
		}
		n, rerr := body.Read(*buf)
		if n > 0 && out != nil {
			if _, err := out.Write((*buf)[:n]); err != nil {
				out.Close()
				out = nil
			}
		}
		if rerr == io.EOF {
			break
		}
		if rerr != nil {
			x.bodyErr = rerr
			x.kill()
			break
		}
	}
	x.stdinW.Close()
}

// feedMem writes a body spooled in memory to the program's stdin.
func (x *run) feedMem(b []byte) {
	defer close(x.feeding)
	x.stdinW.Write(b) // a program may stop reading
	x.stdinW.Close()
}

// readStdout sends the program's stdout to x.chunks until EOF.
func (x *run) readStdout() {
	defer close(x.chunks)
	for {
		buf := bufs.Get().(*[]byte)
		n, err := x.stdoutR.Read(*buf)
		if n > 0 {
			select {
			case x.chunks <- (*buf)[:n]:
			case <-x.quit:
				bufs.Put(buf)
				return
			}
		} else {
			bufs.Put(buf)
		}
		if err != nil {
			return
		}
	}
}

func recycle(b []byte) {
	b = b[:cap(b)]
	bufs.Put(&b)
}

// logStderr logs the program's stderr line by line, a bounded number of
// lines of bounded length, and drains the rest.
func (x *run) logStderr() {
	defer close(x.logged)
	br := bufio.NewReaderSize(x.stderrR, maxStderrLine)
	logged, dropped := 0, 0
	truncated := false // inside a line too long to log whole
	for {
		line, err := br.ReadSlice('\n')
		if len(line) > 0 {
			cont := truncated
			truncated = err == bufio.ErrBufferFull
			if !cont {
				if logged < maxStderrLogs {
					logged++
					x.g.log.Warn("cgi: stderr", "script", x.scriptName,
						"line", strings.TrimRight(string(line), "\r\n"), "truncated", truncated, x.id)
				} else {
					dropped++
				}
			}
		}
		if err != nil && err != bufio.ErrBufferFull {
			break
		}
	}
	if dropped > 0 {
		x.g.log.Warn("cgi: stderr lines not logged", "script", x.scriptName, "count", dropped, x.id)
	}
}

// end stops everything the run started: it waits for the feeders and the
// stdout reader, for the program to exit (it has closed its stdout, or
// was killed), then lets the reaper kill what is left of its group and
// reap it, and logs an unsuccessful exit.
func (x *run) end() {
	if x.stdinW != nil {
		x.stdinW.Close()
	}
	<-x.fed
	<-x.feeding
	close(x.quit)
	// Stdout is at EOF unless respond returned early, in which case the
	// group has been killed; closing it unblocks the reader either way.
	x.stdoutR.Close()
	for b := range x.chunks {
		recycle(b)
	}
	<-x.leader
	x.stopOnce.Do(func() { close(x.stop) })
	<-x.exited

	// Stderr ends with the group, unless a process escaped it (setsid)
	// holding the pipe: give it a moment, then stop listening.
	grace := time.NewTimer(time.Second)
	select {
	case <-x.logged:
	case <-grace.C:
	}
	grace.Stop()
	x.stderrR.Close()
	<-x.logged

	switch {
	case x.timedOut.Load():
		x.g.log.Warn("cgi: program killed after timeout", "script", x.scriptName, "timeout", x.g.timeout, x.id)
	case x.clientGone.Load():
		x.g.log.Info("cgi: program killed: the client went away", "script", x.scriptName, x.id)
	case x.closing.Load():
		x.g.log.Warn("cgi: program killed: shutting down", "script", x.scriptName, x.id)
	case x.killed:
		// the program misbehaved or the client went away; said already
	case x.waitErr != nil:
		x.g.log.Warn("cgi: program failed", "script", x.scriptName, "err", x.waitErr, x.id)
	}
}
