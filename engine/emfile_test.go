package engine

import (
	"bufio"
	"fmt"
	"io"
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
func TestEMFILEChild(t *testing.T) {
	if os.Getenv("SLUICE_EMFILE_CHILD") != "1" {
		t.Skip("run by TestAcceptRecoversFromEMFILE")
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
	}
	s.Serve(ln)
}

// Out of file descriptors, the accept loop backs off and recovers (closing
// idle connections) instead of spinning or exiting.
func TestAcceptRecoversFromEMFILE(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestEMFILEChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SLUICE_EMFILE_CHILD=1")
	stdout, _ := cmd.StdoutPipe()
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	br := bufio.NewReader(stdout)
	var addr string
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

	// Exhaust the child's descriptors with connections that send the start
	// of a request head and stop. (Connections that send nothing are not
	// even accepted for a second: the listener defers accepting until
	// bytes arrive.)
	var hogs []net.Conn
	for i := 0; i < 40; i++ {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, "GET / HTTP/1.1\r\n")
		hogs = append(hogs, c)
	}
	defer func() {
		for _, c := range hogs {
			c.Close()
		}
	}()
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
	if cmd.ProcessState != nil {
		t.Fatalf("child exited: %s", stderr.String())
	}
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Errorf("the child never hit EMFILE; stderr:\n%.2000s", stderr.String())
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
