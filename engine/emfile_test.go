//go:build unix

package engine

import (
	"bufio"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// The child half of TestAcceptRecoversFromEMFILE: a server whose process
// may open only a few descriptors.
//
// In mode "stall" its connections must send their heads within 300ms;
// in mode "parked" they stay for an hour, and the limit on connections
// is far above the descriptors the process may open, so that only
// running out of descriptors makes it close idle (parked) ones; GET
// /parked answers with the number of connections parked.
func TestEMFILEChild(t *testing.T) {
	mode := os.Getenv("SLUICE_EMFILE_CHILD")
	if mode == "" {
		t.Skip("run by TestAcceptRecoversFromEMFILE and others")
	}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := syscall.Rlimit{Cur: 24, Max: 24}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	fmt.Println(ln.Addr())
	s := &Server{
		Handler: HandlerFunc(func(w ResponseWriter, r *Request) { w.WriteString("alive") }),
		Limits:  Limits{HeaderTimeout: 300 * time.Millisecond},
		// time= to the millisecond, for TestAcceptBackoffBoundsItsLog.
		Logger: slog.New(slog.NewTextHandler(os.Stderr, nil)),
	}
	if mode == "parked" {
		s.Limits = Limits{IdleTimeout: time.Hour, MaxConns: 1000}
		s.Handler = HandlerFunc(func(w ResponseWriter, r *Request) {
			fmt.Fprintf(writerOnly{w}, "parked=%d", s.stats.parked.Load())
		})
	}
	s.Serve(ln)
}

// startEMFILEChild runs TestEMFILEChild in a child process in mode and
// returns the address it serves and its standard error, where its server
// logs. The child is killed when the test ends.
func startEMFILEChild(t *testing.T, mode string) (addr string, stderr *lockedBuffer) {
	t.Helper()
	addr, _, stderr = startChild(t, "TestEMFILEChild", "SLUICE_EMFILE_CHILD="+mode)
	return addr, stderr
}

// startChild runs the test named test in a child process (this test
// binary) with env added to its environment, and returns the address its
// server prints on standard output (a line starting 127.0.0.1:), its
// process id and its standard error. The child is killed when the test
// ends.
func startChild(t *testing.T, test string, env ...string) (addr string, pid int, stderr *lockedBuffer) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+test+"$", "-test.v")
	cmd.Env = append(os.Environ(), env...)
	stdout, _ := cmd.StdoutPipe()
	stderr = new(lockedBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	br := bufio.NewReader(stdout)
	for addr == "" {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("child: %v\n%s", err, stderr.String())
		}
		if strings.HasPrefix(line, "127.0.0.1:") {
			addr = strings.TrimSpace(line)
		}
	}
	go io.Copy(io.Discard, br)
	return addr, cmd.Process.Pid, stderr
}

// hog opens a connection that sends the start of a request head and
// stops, holding one of the server's descriptors until its HeaderTimeout.
// (A connection that sends nothing is not even accepted for a second: the
// listener defers accepting until bytes arrive.) It is closed when the
// test ends.
func hog(t *testing.T, addr string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	io.WriteString(c, "GET / HTTP/1.1\r\n")
}

// Out of file descriptors, the accept loop backs off and recovers (closing
// idle connections) instead of spinning or exiting.
func TestAcceptRecoversFromEMFILE(t *testing.T) {
	addr, stderr := startEMFILEChild(t, "stall")
	for i := 0; i < 40; i++ {
		hog(t, addr)
	}
	// The server must keep answering: connections that stall time out, freeing descriptors for the ones waiting in the backlog.
	waitFor(t, "a request to be answered despite EMFILE", func() bool {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(2 * time.Second))
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
		b, _ := io.ReadAll(c)
		return strings.Contains(string(b), "alive")
	})
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Errorf("the child never hit EMFILE; stderr:\n%.2000s", stderr.String())
	}
}

// A server kept at its descriptor limit logs its accept failures at most
// about once a second, however often accepts fail and succeed in turn
// (issue 14, finding 8: the back-off was reset by every successful accept
// and a warning logged every 5ms).
func TestAcceptBackoffBoundsItsLog(t *testing.T) {
	addr, stderr := startEMFILEChild(t, "stall")
	// New hogs keep arriving while the old ones time out (after 300ms),
	// so accepts fail and succeed in turn for as long as this runs.
	for start := time.Now(); time.Since(start) < 3*time.Second; {
		hog(t, addr)
		time.Sleep(5 * time.Millisecond) // pace the load, not a synchronisation
	}
	log := stderr.String()
	if !strings.Contains(log, "too many open files") {
		t.Fatalf("the child never hit EMFILE; stderr:\n%.2000s", log)
	}
	// The warnings are counted against the span of the server's own
	// clock they cover (their time= fields), not against how long this
	// loop ran: one a second (sock.AcceptBackoff's pace, on the server's
	// coarse clock), the first at once, and one more for the coarse
	// clock's lag behind the log's at the first.
	var times []time.Time
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "accept failed; retrying") {
			continue
		}
		f, _, _ := strings.Cut(strings.TrimPrefix(line, "time="), " ")
		at, err := time.Parse(time.RFC3339Nano, f)
		if err != nil {
			t.Fatalf("warning without a time: %q", line)
		}
		times = append(times, at)
	}
	if len(times) == 0 {
		t.Fatalf("no accept warning logged:\n%.2000s", log)
	}
	span := times[len(times)-1].Sub(times[0])
	if max := int(span/time.Second) + 2; len(times) > max {
		t.Errorf("%d accept warnings over %v of the server's clock, want at most %d:\n%.3000s", len(times), span, max, log)
	}
	if !strings.Contains(log, "suppressed=") {
		t.Errorf("the warnings do not count the errors left unlogged:\n%.2000s", log)
	}
}

// lockedBuffer is a strings.Builder safe to write from a child's output
// copier while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
