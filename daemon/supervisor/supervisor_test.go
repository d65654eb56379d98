//go:build linux

package supervisor

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sock"
)

// A worker that keeps failing before it is healthy waits longer each
// time: none the first time, then 100ms doubling up to 30s.
func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{
		0: 0, 1: 0, 2: 100 * time.Millisecond, 3: 200 * time.Millisecond, 4: 400 * time.Millisecond,
		10: 25600 * time.Millisecond, 11: 30 * time.Second, 12: 30 * time.Second, 1000: 30 * time.Second,
	} {
		if got := backoff(n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

// pair returns the two ends of a control channel.
func pair(t *testing.T) (a, b *net.UnixConn) {
	t.Helper()
	fa, fb, err := socketpair(syscall.SOCK_SEQPACKET, "control")
	if err != nil {
		t.Fatal(err)
	}
	if a, err = fileConn(fa); err != nil {
		t.Fatal(err)
	}
	if b, err = fileConn(fb); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// Messages cross the control channel one per packet, whole, with a
// descriptor when one is attached; a closed end reads as an error.
func TestControlMessages(t *testing.T) {
	a, b := pair(t)
	beat := message{Type: msgBeat, Stats: &Stats{Open: 3, Accepted: 9, Requests: 27, BytesWritten: 1 << 40}}
	view := message{Type: msgView, Workers: []components.WorkerStatus{{ID: 1, PID: 42, State: "serving"}, {ID: 2, PID: 43}}}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, m := range []message{beat, view} {
		if err := send(a, m, nil, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	if err := send(a, message{Type: msgProbe}, r, time.Second); err != nil {
		t.Fatal(err)
	}
	for _, want := range []message{beat, view} {
		got, f, err := receive(b)
		if err != nil || f != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("receive = %+v, %v, %v; want %+v", got, f, err, want)
		}
	}
	got, f, err := receive(b)
	if err != nil || got.Type != msgProbe || f == nil {
		t.Fatalf("receive = %+v, %v, %v; want a probe with a descriptor", got, f, err)
	}
	defer f.Close()
	io.WriteString(w, "through")
	w.Close()
	if b, err := io.ReadAll(f); err != nil || string(b) != "through" {
		t.Errorf("the descriptor passed reads %q, %v; want the pipe's bytes", b, err)
	}
	a.Close()
	if _, _, err := receive(b); err == nil {
		t.Error("receive after the other end closed: no error")
	}
}

// A worker is started without the master's own environment variables.
func TestWorkerEnv(t *testing.T) {
	env := []string{"PATH=/bin", "NOTIFY_SOCKET=/run/systemd/notify", "LISTEN_PID=1", "LISTEN_FDS=2", "LISTEN_FDNAMES=a:b", "LISTEN=kept", "HOME=/root"}
	orig := slices.Clone(env)
	if got, want := workerEnv(env), []string{"PATH=/bin", "LISTEN=kept", "HOME=/root"}; !slices.Equal(got, want) {
		t.Errorf("workerEnv = %q, want %q", got, want)
	}
	if !slices.Equal(env, orig) {
		t.Errorf("workerEnv changed its argument: %q", env)
	}
}

// helperEnv makes the test binary, run by TestWorkerDescriptors as a
// worker, check what it inherited (TestWorkerDescriptorsHelper).
const helperEnv = "SUPERVISOR_TEST_WORKER"

// A worker inherits its control channel as descriptor 3, its setup pipe
// as 4 (the setup, then EOF) and the listening sockets from 5 on, in the
// order of setup.Addrs; and not NOTIFY_SOCKET. The worker is this test
// binary, which reports what it found over the control channel.
func TestWorkerDescriptors(t *testing.T) {
	ln, err := sock.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lf, err := sock.ListenerFile(ln)
	ln.Close()
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	addr := config.Address{Network: "tcp", Addr: "127.0.0.1:0"}
	t.Setenv("NOTIFY_SOCKET", "/nonexistent/notify")
	m := &Master{
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestWorkerDescriptorsHelper$")
			cmd.Env = append(os.Environ(), helperEnv+"=1")
			return cmd
		},
		Stdout: io.Discard,
	}
	m.init()
	m.log = slog.New(slog.DiscardHandler)
	m.logw = &lineWriter{w: io.Discard}
	m.lns = map[config.Address]*os.File{addr: lf}
	g := &generation{name: "w.yaml", data: []byte("routes: []\n"), addrs: []config.Address{addr}, n: 3,
		health: config.Health{}.WithDefaults(), workers: make([]*worker, 1), restarts: make([]int, 1), failures: make([]int, 1)}
	w := &worker{id: 7, gen: g, exited: make(chan struct{})}
	if err := m.spawn(w); err != nil {
		t.Fatal(err)
	}
	defer func() {
		w.kill()
		<-w.exited
	}()
	for {
		select {
		case e := <-m.events:
			if e.kind == evExit {
				t.Fatalf("the worker exited: %v", e.err)
			}
			if e.kind != evMessage {
				continue
			}
			if e.msg.Type != msgReady {
				t.Fatalf("the worker says: %s", e.msg.Error)
			}
			return
		case <-time.After(20 * time.Second):
			t.Fatal("no word from the worker")
		}
	}
}

// TestWorkerDescriptorsHelper is the worker of TestWorkerDescriptors.
func TestWorkerDescriptorsHelper(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the worker process of TestWorkerDescriptors")
	}
	typ, typErr := unix.GetsockoptInt(fdControl, unix.SOL_SOCKET, unix.SO_TYPE)
	ctl, err := fileConn(os.NewFile(fdControl, "control")) // closes fd 3
	if err != nil {
		os.Exit(2)
	}
	problem := func() string {
		if typErr != nil || typ != unix.SOCK_SEQPACKET {
			return fmt.Sprintf("fd %d: socket type %d, %v; want SOCK_SEQPACKET", fdControl, typ, typErr)
		}
		var su setup
		sf := os.NewFile(fdSetup, "setup")
		if err := json.NewDecoder(sf).Decode(&su); err != nil {
			return fmt.Sprintf("fd %d: the setup: %v", fdSetup, err)
		}
		if rest, err := io.ReadAll(sf); err != nil || len(rest) != 0 {
			return fmt.Sprintf("fd %d: %q after the setup, %v; want EOF", fdSetup, rest, err)
		}
		if su.ID != 7 || su.Name != "w.yaml" || string(su.Config) != "routes: []\n" || su.N != 3 || len(su.Addrs) != 1 ||
			su.Health != (config.Health{}.WithDefaults()) {
			return fmt.Sprintf("setup %+v", su)
		}
		if on, err := unix.GetsockoptInt(fdListeners, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on != 1 {
			return fmt.Sprintf("fd %d: not a listening socket: %v", fdListeners, err)
		}
		if sa, err := unix.Getsockname(fdListeners); err != nil {
			return fmt.Sprintf("fd %d: %v", fdListeners, err)
		} else if in, ok := sa.(*unix.SockaddrInet4); !ok || in.Addr != [4]byte{127, 0, 0, 1} {
			return fmt.Sprintf("fd %d: bound to %v, want 127.0.0.1", fdListeners, sa)
		}
		if v, ok := os.LookupEnv("NOTIFY_SOCKET"); ok {
			return "NOTIFY_SOCKET=" + v + " was passed on"
		}
		return ""
	}()
	msg := message{Type: msgReady, PID: os.Getpid()}
	if problem != "" {
		msg = message{Type: msgError, Error: problem}
	}
	send(ctl, msg, nil, time.Second)
	ctl.Read(make([]byte, 1)) // until the master kills this process
	os.Exit(0)
}

// Reload and ReopenLogs never block, and what they ask for while Run's
// loop is busy (or not yet running) is kept, once however often it was
// asked: before, each waited up to a second for a queue of eight, and
// was dropped if the loop stayed busy, a reload lost with no word.
func TestRequestsToTheMasterCoalesce(t *testing.T) {
	m := &Master{}
	done := make(chan struct{})
	go func() {
		for range 100 {
			m.Reload()
			m.ReopenLogs()
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Reload or ReopenLogs blocked with no loop to take them")
	}
	if !m.wantReload.Load() || !m.wantReopen.Load() {
		t.Errorf("wanted: reload %v, reopen %v; want both", m.wantReload.Load(), m.wantReopen.Load())
	}
	if n := len(m.poke); n != 1 {
		t.Errorf("%d pokes pending, want 1", n)
	}
}
