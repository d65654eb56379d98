package engine

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Beyond C10K (issue 18): one server holds 50,000 idle keep-alive
// connections in bounded memory and answers every one when it speaks
// again. The server runs in a child process (TestC50KChild), so that its
// memory is its own: its heap after a collection and its parked count, as
// it reports them, and its resident set, from /proc. Nothing is timed.
//
// It needs 50,000 descriptors in the server and as many in this process,
// which is why it runs only when asked (make test-c50k; it is slow under
// the race detector, whose memory would also swamp the figures): c50kEnv
// holds the number of connections.

// c50kEnv names the variable that runs TestC50KIdle with that many
// connections.
const c50kEnv = "SLUICE_C50K"

// Bounds per idle connection, generous beside the figures measured
// (docs/benchmarks.md, "How idle connections stay small": about 500 B of
// heap, 800 B of resident memory at 10,000 and 50,000): a goroutine per
// idle connection, as before parking, costs over 4 KB.
const (
	c50kHeapPerConn = 1024
	c50kRSSPerConn  = 2048
)

// c50kPerAddr is how many connections share a client source address:
// spread over 127.0.0.0/8 they need few ephemeral ports each, where from
// 127.0.0.1 alone they would run out (ip_local_port_range allows about
// 28,000).
const c50kPerAddr = 200

// TestC50KChild is the server of TestC50KIdle, not a test: it raises its
// descriptor limit, prints its address and serves until killed. GET
// /stats answers "parked=P heap=H goroutines=G" (H the heap in use after
// two collections, so that pooled sessions are gone too); any other GET
// answers its path.
func TestC50KChild(t *testing.T) {
	if os.Getenv("SLUICE_C50K_CHILD") == "" {
		t.Skip("the server of TestC50KIdle")
	}
	n, err := strconv.Atoi(os.Getenv(c50kEnv))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raiseFileLimit(n + 64); err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Limits: Limits{IdleTimeout: time.Hour, BusyIdleTimeout: time.Hour, MaxConns: n + 64}}
	s.Handler = HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) != "/stats" {
			w.Write(r.Path)
			return
		}
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		fmt.Fprintf(writerOnly{w}, "parked=%d heap=%d goroutines=%d", s.stats.parked.Load(), ms.HeapAlloc, runtime.NumGoroutine())
	})
	fmt.Println(ln.Addr())
	s.Serve(ln)
}

// cannotRun skips a test that was asked to run (make test-c50k, make
// test-tlsidle) but cannot here, saying why; when the environment
// variable CI is set it fails instead, as sluicetest.NeedTool does for a
// missing program: .ci/run raises the limits these tests need, so there
// a test that cannot run is a broken setup that would otherwise pass by
// testing nothing.
func cannotRun(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set, so this does not skip: "+format, args...)
	}
	t.Skipf(format, args...)
}

// raiseFileLimit raises the soft limit on open descriptors to the hard
// limit, and reports the hard limit; it fails if that is below need.
func raiseFileLimit(need int) (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	if rl.Max < uint64(need) {
		return rl.Max, fmt.Errorf("the hard limit on open files (RLIMIT_NOFILE) is %d, below the %d needed", rl.Max, need)
	}
	rl.Cur = rl.Max
	return rl.Max, syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
}

// c50kStats is what TestC50KChild reports, and its resident set.
type c50kStats struct {
	parked, heap, goroutines, rss int64
}

// c50kRead asks the server at addr, whose process is pid, for its stats,
// on a connection of its own, closed at once (unlike exchange's, kept
// until the test ends: this is called in a loop, and descriptors are
// counted).
func c50kRead(t *testing.T, addr string, pid int) c50kStats {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	io.WriteString(c, "GET /stats HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	raw, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the stats: %v", err)
	}
	_, body, _ := strings.Cut(string(raw), "\r\n\r\n")
	var st c50kStats
	if _, err := fmt.Sscanf(body, "parked=%d heap=%d goroutines=%d", &st.parked, &st.heap, &st.goroutines); err != nil {
		t.Fatalf("stats %q: %v", raw, err)
	}
	st.rss = procKB(t, fmt.Sprintf("/proc/%d/status", pid), "VmRSS:")
	return st
}

// procKB returns the value of field (as "VmRSS:") in the /proc file
// name, a number of kB, in bytes.
func procKB(t *testing.T, name, field string) int64 {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(rest)
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil || len(f) != 2 || f[1] != "kB" {
				t.Fatalf("%s: %q", name, line)
			}
			return kb << 10
		}
	}
	t.Fatalf("no %s in %s", field, name)
	return 0
}

// c50kClients is n client connections to one server; conns[i] is bound
// to a source address of its own share of 127.0.0.0/8.
type c50kClients struct {
	conns []net.Conn
}

// c50kSource returns the source address of connection i: c50kPerAddr
// connections share each of 127.1.0.1, 127.1.0.2, … (no .0 or .255).
func c50kSource(i int) *net.TCPAddr {
	k := i / c50kPerAddr
	return &net.TCPAddr{IP: net.IPv4(127, byte(1+k/(250*256)), byte(k/250%256), byte(k%250+1))}
}

// each runs f for every connection, on a few goroutines, and returns the
// first error, naming the connection.
func (cs *c50kClients) each(f func(i int) error) error {
	const workers = 16
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(cs.conns); i += workers {
				if err := f(i); err != nil {
					once.Do(func() { first = fmt.Errorf("connection %d (from %v): %w", i, c50kSource(i).IP, err) })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

// get sends a GET for path on connection i and checks that the server
// answered it, reading the response with br (a buffer of the caller's:
// each connection has one response in flight at most, so nothing is left
// buffered for it).
func (cs *c50kClients) get(i int, path string, br *bufio.Reader) error {
	c := cs.conns[i]
	c.SetDeadline(time.Now().Add(2 * time.Minute)) // a hung server fails the test rather than hanging it
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		return err
	}
	br.Reset(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
	if err != nil {
		return err
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 || !bytes.Equal(body, []byte(path)) {
		return fmt.Errorf("GET %s: %d %q", path, resp.StatusCode, body)
	}
	return nil
}

// 50,000 idle keep-alive connections on one server (c50kEnv sets how
// many): each makes a request and idles, and the server parks them all,
// its heap and resident set growing by less than c50kHeapPerConn and
// c50kRSSPerConn per connection and its goroutines not with their number;
// then every one speaks again and is answered.
func TestC50KIdle(t *testing.T) {
	env := os.Getenv(c50kEnv)
	if env == "" {
		t.Skipf("set %s=50000 to run it (make test-c50k)", c50kEnv)
	}
	n, err := strconv.Atoi(env)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a number of connections", c50kEnv, env)
	}
	if hard, err := raiseFileLimit(n + 64); err != nil {
		cannotRun(t, "%d connections need %d descriptors in the server and as many in this client, "+
			"and the hard limit is %d: raise it (ulimit -Hn, as root) or set %s lower (make test-c50k C50K=N)", n, n+64, hard, c50kEnv)
	}
	// Both ends of a socket in the kernel, the client's connection here
	// and the server's state: 16 KB per connection is several times what
	// they take.
	if need, avail := int64(n)*16<<10, procKB(t, "/proc/meminfo", "MemAvailable:"); avail < need {
		cannotRun(t, "%d connections want %d MB of memory, and %d MB are available", n, need>>20, avail>>20)
	}
	addr, pid, stderr := startChild(t, "TestC50KChild", "SLUICE_C50K_CHILD=1", c50kEnv+"="+env)
	before := c50kRead(t, addr, pid)

	cs := &c50kClients{conns: make([]net.Conn, n)}
	t.Cleanup(func() {
		for _, c := range cs.conns {
			if c != nil {
				c.Close()
			}
		}
	})
	brs := sync.Pool{New: func() any { return bufio.NewReaderSize(nil, 512) }}
	err = cs.each(func(i int) error {
		d := net.Dialer{LocalAddr: c50kSource(i)}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			return err
		}
		cs.conns[i] = c
		br := brs.Get().(*bufio.Reader)
		defer brs.Put(br)
		return cs.get(i, fmt.Sprintf("/c%d/first", i), br)
	})
	if err != nil {
		t.Fatalf("opening the connections: %v\nserver log:\n%.2000s", err, stderr.String())
	}

	// Every connection parks after its first exchange.
	var idle c50kStats
	deadline := time.Now().Add(2 * time.Minute)
	for idle = c50kRead(t, addr, pid); idle.parked != int64(n); idle = c50kRead(t, addr, pid) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d connections parked", idle.parked, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	heap := float64(idle.heap-before.heap) / float64(n)
	rss := float64(idle.rss-before.rss) / float64(n)
	t.Logf("%d idle connections, all parked: server heap %.0f B and resident set %.0f B per connection "+
		"(heap %d → %d MB, RSS %d → %d MB), %d goroutines",
		n, heap, rss, before.heap>>20, idle.heap>>20, before.rss>>20, idle.rss>>20, idle.goroutines)
	if heap > c50kHeapPerConn {
		t.Errorf("the server's heap grew by %.0f B per idle connection, over %d", heap, c50kHeapPerConn)
	}
	if rss > c50kRSSPerConn {
		t.Errorf("the server's resident set grew by %.0f B per idle connection, over %d", rss, c50kRSSPerConn)
	}
	if idle.goroutines > before.goroutines+300 { // runners kept for reuse: 256 at most
		t.Errorf("the server runs %d goroutines with %d idle connections, %d before them", idle.goroutines, n, before.goroutines)
	}

	// Every connection speaks again and is answered.
	err = cs.each(func(i int) error {
		br := brs.Get().(*bufio.Reader)
		defer brs.Put(br)
		return cs.get(i, fmt.Sprintf("/c%d/again", i), br)
	})
	if err != nil {
		t.Fatalf("speaking again: %v\nserver log:\n%.2000s", err, stderr.String())
	}
}
