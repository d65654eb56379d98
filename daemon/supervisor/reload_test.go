//go:build linux

package supervisor

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/sluicetest"
)

// workerEnvVar makes the test binary, run by a Master of these tests, a
// worker (TestMasterWorkerHelper).
const workerEnvVar = "SUPERVISOR_TEST_REAL_WORKER"

// TestMasterWorkerHelper is the worker process of the Masters these
// tests run: the test binary, serving as a real worker does.
func TestMasterWorkerHelper(t *testing.T) {
	if os.Getenv(workerEnvVar) != "1" {
		t.Skip("the worker process of the Master tests")
	}
	if fifo := os.Getenv(workerWaitVar); fifo != "" {
		// Blocks until the test opens the FIFO for writing (release).
		if f, err := os.Open(fifo); err == nil {
			io.Copy(io.Discard, f)
			f.Close()
		}
	}
	if os.Getenv(workerFailVar) == "1" {
		fmt.Fprintln(os.Stderr, "this worker was told to fail")
		os.Exit(1)
	}
	if os.Getenv(setsEnvVar) == "1" {
		admin.SetLocalSets(newMemSets()) // admin_test.go
	}
	os.Exit(RunWorker(os.Stdout, os.Stderr))
}

// workerFailVar makes the worker of TestMasterWorkerHelper exit at once.
const workerFailVar = "SUPERVISOR_TEST_WORKER_FAIL"

// workerWaitVar names a FIFO the worker of TestMasterWorkerHelper waits
// on before it does anything else (see release).
const workerWaitVar = "SUPERVISOR_TEST_WORKER_WAIT"

// testMaster is a Master run by a test, its workers this test binary.
type testMaster struct {
	*Master
	log  *sluicetest.Buffer // the master's log and its workers'
	addr chan string        // the address the listener got
	mu   sync.Mutex
	conf string // what Read returns
	done chan error
	fail atomic.Bool // workers started from now on exit at once
	env  [][]string  // the next workers' extra environment, one each
}

// startMaster runs a Master on conf, whose listen address must be
// 127.0.0.1:0, until the test ends, and waits for its workers to be
// ready. It returns the Master and the address it listens on.
func startMaster(t *testing.T, conf string) (*testMaster, string) {
	t.Helper()
	tm := &testMaster{log: &sluicetest.Buffer{}, addr: make(chan string, 1), conf: conf, done: make(chan error, 1)}
	tm.Master = &Master{
		Read: func() (string, []byte, error) {
			tm.mu.Lock()
			defer tm.mu.Unlock()
			return "test.yaml", []byte(tm.conf), nil
		},
		Command: func() *exec.Cmd {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMasterWorkerHelper$")
			cmd.Env = append(os.Environ(), workerEnvVar+"=1")
			if tm.fail.Load() {
				cmd.Env = append(cmd.Env, workerFailVar+"=1")
			}
			tm.mu.Lock()
			if len(tm.env) > 0 {
				cmd.Env = append(cmd.Env, tm.env[0]...)
				tm.env = tm.env[1:]
			}
			tm.mu.Unlock()
			return cmd
		},
		Listen: func(a config.Address) (net.Listener, error) {
			ln, err := daemon.Listen(a)
			if err == nil {
				select {
				case tm.addr <- ln.Addr().String():
				default:
				}
			}
			return ln, err
		},
		Grace:  time.Minute, // a draining worker's idle connections are closed by the test, not the grace
		Stdout: tm.log,
		Stderr: tm.log,
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { tm.done <- tm.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-tm.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(2 * time.Minute):
			t.Errorf("Run did not return after its context was done\n%s", tm.log)
		}
	})
	tm.waitLog(t, "workers ready", 1)
	return tm, <-tm.addr
}

// setConfig makes Read return conf from now on.
func (tm *testMaster) setConfig(conf string) {
	tm.mu.Lock()
	tm.conf = conf
	tm.mu.Unlock()
}

// waitLog waits until the log holds n lines containing s.
func (tm *testMaster) waitLog(t *testing.T, s string, n int) {
	t.Helper()
	sluicetest.WaitFor(t, fmt.Sprintf("%d log lines with %q", n, s), func() bool {
		log := tm.log.String()
		if strings.Contains(log, `msg="workers cannot start"`) {
			t.Fatalf("the workers cannot start:\n%s", log)
		}
		return strings.Count(log, s) >= n
	})
}

// masterConfig is a config serving text at / and the upstream at /slow.
func masterConfig(text, upstream string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
workers: 1
health: {interval: 50ms, timeout: 5s}
routes:
  - match: /slow
    pipeline:
      - proxy: %s
  - match: /
    pipeline:
      - text: %q
`, upstream, text)
}

// get sends a GET for path on c, a keep-alive connection, and reads the
// response; the error is the connection's.
func get(c net.Conn, br *bufio.Reader, path string) (*http.Response, string, error) {
	if _, err := io.WriteString(c, "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		return nil, "", err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, "", err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b), err
}

// dial opens a keep-alive connection to addr, closed when the test ends.
func dial(t *testing.T, addr string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(time.Minute))
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

// A reload promotes the new workers once healthy and retires the old
// ones by draining them, not stopping them: a request in flight on an
// old worker is answered, and a keep-alive connection idle on it is
// kept, its next request answered by the old config with Connection:
// close. A reload whose config is broken, and a ReopenLogs, leave the
// workers serving.
func TestReloadDrainsOldWorkers(t *testing.T) {
	arrived, release := make(chan struct{}, 1), make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		arrived <- struct{}{}
		<-release
		io.WriteString(w, "slow done")
	}))
	defer up.Close()
	var once sync.Once
	unblock := func() { once.Do(func() { close(release) }) }
	defer unblock()

	tm, addr := startMaster(t, masterConfig("v0", up.URL))

	idle, idleR := dial(t, addr)
	if resp, body, err := get(idle, idleR, "/"); err != nil || body != "v0" || resp.Close {
		t.Fatalf("before the reload: %v %q", err, body)
	}
	slow, slowR := dial(t, addr)
	if _, err := io.WriteString(slow, "GET /slow HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	<-arrived // in flight on the first worker

	// A broken config: the worker keeps serving.
	tm.setConfig("listen: [\n")
	tm.Reload()
	tm.waitLog(t, "reload failed", 1)
	tm.ReopenLogs()
	tm.waitLog(t, "log files reopened", 1)

	tm.setConfig(masterConfig("v1", up.URL))
	tm.Reload()
	tm.waitLog(t, "msg=reloaded", 1)
	// The old worker logs its drain (or stop) just before it begins.
	tm.waitLog(t, `msg="shutting down"`, 1)

	unblock()
	resp, err := http.ReadResponse(slowR, nil)
	if err != nil {
		t.Fatalf("the request in flight across the reload: %v\n%s", err, tm.log)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || string(b) != "slow done" {
		t.Errorf("the request in flight across the reload: %d %q", resp.StatusCode, b)
	}

	// A request may reach the old worker's connection before its drain
	// begins, and is answered as usual; then comes Connection: close.
	for n := 1; ; n++ {
		resp, body, err := get(idle, idleR, "/")
		if err != nil {
			t.Fatalf("the connection idle on the old worker: %v; want it kept while the worker drains", err)
		}
		if body != "v0" {
			t.Fatalf("idle across the reload: %q, want the old config's answer", body)
		}
		if resp.Close {
			break
		}
		if n == 100 {
			t.Fatal("the draining worker never closes the idle connection")
		}
	}
	c, cr := dial(t, addr)
	if _, body, err := get(c, cr, "/"); err != nil || body != "v1" {
		t.Errorf("after the reload: %v %q, want v1", err, body)
	}
	idle.Close()
	slow.Close()
	tm.waitLog(t, `msg="worker stopped"`, 1) // the old worker drained and exited
}

var workerStarted = regexp.MustCompile(`msg="worker started" master=\d+ worker=(\d+) pid=(\d+)`)

// pid returns the pid of worker id, from the log.
func (tm *testMaster) pid(t *testing.T, id int) int {
	t.Helper()
	for _, m := range workerStarted.FindAllStringSubmatch(tm.log.String(), -1) {
		if m[1] == strconv.Itoa(id) {
			pid, _ := strconv.Atoi(m[2])
			return pid
		}
	}
	t.Fatalf("no worker %d in the log:\n%s", id, tm.log)
	return 0
}

// A reload whose new worker fails before it is healthy is given up, the
// old worker serving on; a worker that dies is replaced, and the
// replacement serves.
func TestReloadAbortedAndWorkerReplaced(t *testing.T) {
	tm, addr := startMaster(t, masterConfig("v0", "http://127.0.0.1:1"))
	check := func(want string) {
		t.Helper()
		c, cr := dial(t, addr)
		if _, body, err := get(c, cr, "/"); err != nil || body != want {
			t.Fatalf("GET /: %v %q, want %q\n%s", err, body, want, tm.log)
		}
		c.Close()
	}
	check("v0")

	tm.fail.Store(true)
	tm.setConfig(masterConfig("v1", "http://127.0.0.1:1"))
	tm.Reload()
	tm.waitLog(t, `msg="reload failed; the running workers keep serving" master=`, 1)
	check("v0")

	tm.fail.Store(false)
	syscall.Kill(tm.pid(t, 1), syscall.SIGKILL)
	tm.waitLog(t, `msg="worker exited; replacing it"`, 1)
	tm.waitLog(t, `msg="worker started"`, 3)
	sluicetest.WaitFor(t, "the replacement serving", func() bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return false
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		_, body, err := get(c, bufio.NewReader(c), "/")
		return err == nil && body == "v0"
	})
}
