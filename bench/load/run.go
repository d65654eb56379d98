package load

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Config describes one run. The zero value with Addr and Duration (or
// Requests) set is a closed-loop, keep-alive run on one connection.
type Config struct {
	// Addr is the server's host:port.
	Addr string

	// Host is the Host header field; empty means Addr.
	Host string

	// Paths are the request targets, used in turn by each connection;
	// empty means "/". Mix, if set, replaces them.
	Paths []string

	// Mix, if set, is a weighted list of request targets: each request
	// is drawn from it at random, by Target.Weight, and its outcome is
	// counted in its class (Result.Classes) as well as in the totals.
	// Each connection (or Close worker) draws from a generator of its
	// own seeded with Seed and its index, so a run with the same Seed
	// makes the same requests in the same order on every connection.
	Mix []Target

	// Seed seeds the draws from Mix.
	Seed uint64

	// Conns is the number of connections (with Close: of concurrent
	// workers, each opening a connection per request). Zero means 1.
	Conns int

	// Pipeline is how many requests a connection writes at once before
	// reading their responses (closed loop, keep-alive only). Zero means 1.
	Pipeline int

	// Close makes every request use a new connection ("Connection: close"),
	// as ab does without -k.
	Close bool

	// Duration bounds the run; zero means no time bound (Requests must be
	// set).
	Duration time.Duration

	// Requests bounds the run to this many requests sent; zero means no
	// count bound (Duration must be set).
	Requests int64

	// Rate, if positive, makes the run open-loop at Rate requests/s over
	// all connections; zero means closed loop.
	Rate float64

	// Timeout bounds each dial, write and read, and in an open loop the
	// time from a request's intended start to its answer. Zero means 5 s.
	Timeout time.Duration

	// DialConcurrency bounds how many keep-alive connections are being
	// opened at once before the run starts. Zero means 256.
	DialConcurrency int

	// Started, if set, is called when the clock starts: after the
	// keep-alive connections are open, before the first request. The
	// harness reads the server's CPU time there.
	Started func()
}

// Target is one kind of request of a Config.Mix.
type Target struct {
	// Class names the group the request is counted in: Result.Classes
	// has an entry per distinct Class. Several targets may share one.
	Class string

	// Path is the request target. With IDs set, a number drawn
	// uniformly from 1 to IDs is appended to it: Path "/article/" and
	// IDs 10000 make /article/1 to /article/10000.
	Path string
	IDs  int

	// Weight is the target's share of the requests, relative to the
	// other targets' weights. Zero means 1.
	Weight int
}

// Errors counts failed requests by cause.
type Errors struct {
	Connect     int64 // dial failed
	Write       int64 // writing the request failed
	Read        int64 // the connection closed or broke before a full response
	Timeout     int64 // no answer within Config.Timeout
	Status      int64 // answered with a status other than 2xx, 3xx or 503
	Unavailable int64 // answered 503 Service Unavailable (a server shedding load)
}

// Total is the sum of all errors, 503s included.
func (e Errors) Total() int64 {
	return e.Connect + e.Write + e.Read + e.Timeout + e.Status + e.Unavailable
}

func (e Errors) String() string {
	return fmt.Sprintf("connect %d, write %d, read %d, timeout %d, status %d, 503 %d",
		e.Connect, e.Write, e.Read, e.Timeout, e.Status, e.Unavailable)
}

// errKind names a field of Errors.
type errKind int

const (
	errConnect errKind = iota
	errWrite
	errRead
	errTimeout
	errStatus
	errUnavailable
)

func (e *Errors) add(k errKind) {
	*[...]*int64{&e.Connect, &e.Write, &e.Read, &e.Timeout, &e.Status, &e.Unavailable}[k]++
}

// Class is the outcome of the requests of one class of a Config.Mix.
type Class struct {
	OK      int64      // responses with a 2xx or 3xx status
	Errors  Errors     // failures, as in Result.Errors
	Latency *Histogram // latency of each OK response, as in Result.Latency
}

// Result is the outcome of a run.
type Result struct {
	// Attempted is the number of requests the run meant to make: in an
	// open loop, the number scheduled (Rate × Duration); in a closed loop,
	// the number written.
	Attempted int64

	// OK is the number of responses with a 2xx or 3xx status.
	OK int64

	// Errors counts failures; in an open loop OK + Errors.Total() ==
	// Attempted.
	Errors Errors

	// Bytes is the number of response bytes received (heads and bodies).
	Bytes int64

	// Conns is the number of keep-alive connections open when the clock
	// started (with Close: Config.Conns).
	Conns int

	// Elapsed is the measured time, from the start of the clock until the
	// last connection stopped (in an open loop, until Duration, the
	// scheduling window).
	Elapsed time.Duration

	// Latency holds the latency of every successful response: from
	// writing its batch (closed loop) or from its intended start (open
	// loop) to its last byte.
	Latency *Histogram

	// FirstError is the first error seen, for the report; nil if none.
	FirstError error

	// Classes holds, with Config.Mix, the outcome of each class of
	// target, keyed by Target.Class; nil without Mix. Their OK and
	// errors add up to the totals above, but for keep-alive connections
	// that failed to open before the clock started (counted in
	// Errors.Connect only: no request was drawn for them).
	Classes map[string]*Class
}

// RPS is successful responses per second of Elapsed.
func (r *Result) RPS() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.OK) / r.Elapsed.Seconds()
}

// run is the shared state of one Run.
type run struct {
	cfg      Config
	reqs     [][]byte // one request per path, without Mix
	mix      []mixTarget
	weights  int // sum of the mix's weights
	classes  []*Class
	start    time.Time
	end      time.Time // zero: no time bound
	interval float64   // open loop: nanoseconds between requests
	tickets  atomic.Int64
	stop     atomic.Bool
	hist     *Histogram

	mu       sync.Mutex
	res      Result
	firstErr error
}

// Run performs the load described by cfg and returns what it measured.
// It returns an error only for an unusable Config; failures of the
// server are counted in Result.Errors.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	if cfg.Addr == "" {
		return nil, errors.New("load: no address")
	}
	if cfg.Duration <= 0 && cfg.Requests <= 0 {
		return nil, errors.New("load: neither Duration nor Requests set")
	}
	if cfg.Rate > 0 && cfg.Duration <= 0 {
		return nil, errors.New("load: an open loop (Rate) needs a Duration")
	}
	if cfg.Host == "" {
		cfg.Host = cfg.Addr
	}
	if len(cfg.Paths) == 0 {
		cfg.Paths = []string{"/"}
	}
	cfg.Conns = max(cfg.Conns, 1)
	cfg.Pipeline = max(cfg.Pipeline, 1)
	if cfg.Close || cfg.Rate > 0 {
		cfg.Pipeline = 1
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Second
	}
	if cfg.DialConcurrency <= 0 {
		cfg.DialConcurrency = 256
	}
	r := &run{cfg: cfg, hist: new(Histogram)}
	tail := " HTTP/1.1\r\nHost: " + cfg.Host + "\r\nUser-Agent: sluicebench\r\n"
	if cfg.Close {
		tail += "Connection: close\r\n"
	}
	tail += "\r\n"
	for _, p := range cfg.Paths {
		r.reqs = append(r.reqs, []byte("GET "+p+tail))
	}
	if len(cfg.Mix) > 0 {
		r.res.Classes = map[string]*Class{}
		index := map[string]int{}
		for _, t := range cfg.Mix {
			c, ok := index[t.Class]
			if !ok {
				c = len(r.classes)
				index[t.Class] = c
				r.classes = append(r.classes, &Class{Latency: new(Histogram)})
				r.res.Classes[t.Class] = r.classes[c]
			}
			weight := t.Weight
			if weight <= 0 {
				weight = 1
			}
			r.weights += weight
			r.mix = append(r.mix, mixTarget{head: []byte("GET " + t.Path), tail: []byte(tail), ids: t.IDs, upTo: r.weights, class: c})
		}
	}
	if cfg.Rate > 0 {
		r.interval = 1e9 / cfg.Rate
	}

	// Keep-alive connections are opened before the clock starts.
	conns := make([]net.Conn, cfg.Conns)
	if !cfg.Close {
		sem := make(chan struct{}, cfg.DialConcurrency)
		var wg sync.WaitGroup
		for i := range conns {
			if ctx.Err() != nil {
				break
			}
			sem <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-sem; wg.Done() }()
				c, err := r.dial()
				if err != nil {
					r.fail(errConnect, -1, err)
					return
				}
				conns[i] = c
			}()
		}
		wg.Wait()
		for _, c := range conns {
			if c != nil {
				r.res.Conns++
			}
		}
	} else {
		r.res.Conns = cfg.Conns
	}

	if cfg.Started != nil {
		cfg.Started()
	}
	r.start = time.Now()
	if cfg.Duration > 0 {
		r.end = r.start.Add(cfg.Duration)
	}
	stopCtx := context.AfterFunc(ctx, func() { r.stop.Store(true) })
	defer stopCtx()

	var wg sync.WaitGroup
	for i, c := range conns {
		if !cfg.Close && c == nil {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			w := worker{r: r, c: c}
			if len(r.mix) > 0 {
				w.rng = rand.New(rand.NewPCG(cfg.Seed, uint64(i)))
			} else {
				w.path = i % len(r.reqs)
			}
			if c != nil {
				w.br = bufio.NewReaderSize(c, 16<<10)
			}
			if cfg.Rate > 0 {
				w.openLoop()
			} else {
				w.closedLoop()
			}
			if w.c != nil {
				w.c.Close()
			}
			r.mu.Lock()
			r.res.OK += w.ok
			r.res.Attempted += w.sent
			r.res.Bytes += w.bytes
			for c, n := range w.classOK {
				r.classes[c].OK += n
			}
			r.mu.Unlock()
		}()
	}
	wg.Wait()
	r.res.Elapsed = time.Since(r.start)
	if cfg.Rate > 0 {
		r.res.Elapsed = cfg.Duration
	}
	r.res.Latency = r.hist
	r.res.FirstError = r.firstErr
	return &r.res, nil
}

func (r *run) dial() (net.Conn, error) {
	c, err := net.DialTimeout("tcp", r.cfg.Addr, r.cfg.Timeout)
	if err != nil {
		return nil, err
	}
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetNoDelay(true)
	}
	return c, nil
}

// fail counts an error of kind k, for a request of class (an index of
// r.classes; -1 without Mix).
func (r *run) fail(k errKind, class int, err error) {
	r.mu.Lock()
	r.res.Errors.add(k)
	if class >= 0 {
		r.classes[class].Errors.add(k)
	}
	if r.firstErr == nil {
		r.firstErr = err
	}
	r.mu.Unlock()
}

// failIO counts a dial, write or read error by its cause.
func (r *run) failIO(k errKind, class int, err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, os.ErrDeadlineExceeded) {
		k = errTimeout
	} else if errors.Is(err, syscall.ECONNREFUSED) {
		k = errConnect
	}
	r.fail(k, class, err)
}

// failStatus counts a response whose status is not 2xx or 3xx.
func (r *run) failStatus(status, class int) {
	k := errStatus
	if status == 503 {
		k = errUnavailable
	}
	r.fail(k, class, fmt.Errorf("status %d", status))
}

// mixTarget is a Target made ready to write.
type mixTarget struct {
	head  []byte // "GET " and the path
	tail  []byte // " HTTP/1.1", the header and the empty line
	ids   int
	upTo  int // the running sum of the weights, this target's included
	class int // index in run.classes
}

// over reports whether the time bound has passed or the run was stopped.
func (r *run) over(now time.Time) bool {
	return r.stop.Load() || (!r.end.IsZero() && !now.Before(r.end))
}

// worker is one connection (or, with Close, one sequence of connections).
type worker struct {
	r       *run
	c       net.Conn
	br      *bufio.Reader
	path    int        // without Mix: index of the next request in r.reqs
	rng     *rand.Rand // with Mix: draws the requests
	batch   []int      // class of each request in buf; -1 without Mix
	buf     []byte
	sent    int64 // closed loop: requests written or lost to a failed dial
	ok      int64
	bytes   int64
	classOK []int64 // with Mix: OK responses by class
}

// appendRequest appends the next request to w.buf and its class to
// w.batch. It allocates nothing once both have grown to a batch's size.
func (w *worker) appendRequest() {
	r := w.r
	if len(r.mix) == 0 {
		w.buf = append(w.buf, r.reqs[w.path]...)
		w.path = (w.path + 1) % len(r.reqs)
		w.batch = append(w.batch, -1)
		return
	}
	n := w.rng.IntN(r.weights)
	i := 0
	for r.mix[i].upTo <= n {
		i++
	}
	t := &r.mix[i]
	w.buf = append(w.buf, t.head...)
	if t.ids > 0 {
		w.buf = strconv.AppendInt(w.buf, int64(1+w.rng.IntN(t.ids)), 10)
	}
	w.buf = append(w.buf, t.tail...)
	w.batch = append(w.batch, t.class)
}

// succeed counts an OK response of class, with its latency.
func (w *worker) succeed(class int, d time.Duration) {
	w.ok++
	w.r.hist.Record(d)
	if class >= 0 {
		if w.classOK == nil {
			w.classOK = make([]int64, len(w.r.classes))
		}
		w.classOK[class]++
		w.r.classes[class].Latency.Record(d)
	}
}

// takeTickets claims n requests under the Requests bound; it returns how
// many it got.
func (w *worker) takeTickets(n int64) int64 {
	if w.r.cfg.Requests <= 0 {
		w.r.tickets.Add(n)
		return n
	}
	k := w.r.tickets.Add(n)
	if k <= w.r.cfg.Requests {
		return n
	}
	return max(n-(k-w.r.cfg.Requests), 0)
}

// connect makes sure w has a connection; it reports false if it failed,
// counting the failure against a request of class.
func (w *worker) connect(class int) bool {
	if w.c != nil {
		return true
	}
	c, err := w.r.dial()
	if err != nil {
		w.r.failIO(errConnect, class, err)
		return false
	}
	w.c = c
	if w.br == nil {
		w.br = bufio.NewReaderSize(c, 16<<10)
	} else {
		w.br.Reset(c)
	}
	return true
}

func (w *worker) drop() {
	if w.c != nil {
		w.c.Close()
		w.c = nil
	}
}

// closedLoop writes batches of Pipeline requests and reads their
// responses until the run is over.
func (w *worker) closedLoop() {
	r := w.r
	for {
		now := time.Now()
		if r.over(now) {
			return
		}
		n := w.takeTickets(int64(r.cfg.Pipeline))
		if n == 0 {
			return
		}
		w.sent += n
		w.buf, w.batch = w.buf[:0], w.batch[:0]
		for range n {
			w.appendRequest()
		}
		if !w.connect(w.batch[0]) {
			// Do not spin on a refusing server.
			time.Sleep(time.Millisecond)
			continue
		}
		w.c.SetDeadline(now.Add(r.cfg.Timeout))
		t0 := time.Now()
		if _, err := w.c.Write(w.buf); err != nil {
			r.failIO(errWrite, w.batch[0], err)
			w.drop()
			continue
		}
		for i, class := range w.batch {
			resp, err := readResponse(w.br, false)
			w.bytes += resp.bytes
			if err != nil {
				// Requests cut short by the end of the run are not errors.
				if !r.over(time.Now()) {
					r.failIO(errRead, class, err)
					// The rest of the batch is lost with the connection.
					for _, c := range w.batch[i+1:] {
						r.fail(errRead, c, err)
					}
				}
				w.drop()
				break
			}
			if resp.status/100 == 2 || resp.status/100 == 3 {
				w.succeed(class, time.Since(t0))
			} else {
				r.failStatus(resp.status, class)
			}
			if resp.close {
				w.drop()
				break // requests after a close are lost; counted as sent
			}
		}
		if r.cfg.Close {
			w.drop()
		}
	}
}

// openLoop takes the next scheduled request, waits for its time, and
// makes it, until the schedule passes Duration.
func (w *worker) openLoop() {
	r := w.r
	for !r.stop.Load() {
		k := r.tickets.Add(1) - 1
		due := r.start.Add(time.Duration(float64(k) * r.interval))
		if !due.Before(r.end) {
			r.tickets.Add(-1)
			return
		}
		r.mu.Lock()
		r.res.Attempted++
		r.mu.Unlock()
		if wait := time.Until(due); wait > 0 {
			time.Sleep(wait)
		}
		w.buf, w.batch = w.buf[:0], w.batch[:0]
		w.appendRequest()
		class := w.batch[0]
		deadline := due.Add(r.cfg.Timeout)
		if !time.Now().Before(deadline) {
			// Too late to be answered within the timeout: a client would
			// have given up on it.
			r.fail(errTimeout, class, errors.New("load: request could not be sent within the timeout"))
			continue
		}
		if !w.connect(class) {
			continue
		}
		w.c.SetDeadline(deadline)
		if _, err := w.c.Write(w.buf); err != nil {
			r.failIO(errWrite, class, err)
			w.drop()
			continue
		}
		resp, err := readResponse(w.br, false)
		w.bytes += resp.bytes
		switch {
		case err != nil:
			r.failIO(errRead, class, err)
			w.drop()
			continue
		case resp.status/100 == 2 || resp.status/100 == 3:
			w.succeed(class, time.Since(due))
		default:
			r.failStatus(resp.status, class)
		}
		if resp.close || r.cfg.Close {
			w.drop()
		}
	}
}
