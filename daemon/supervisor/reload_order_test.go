//go:build linux

package supervisor

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/sluicetest"
)

// twoWorkers is a config of two workers serving text at / and their
// status (with the master's view of every worker) at /status.
func twoWorkers(text string) string {
	return fmt.Sprintf(`listen: 127.0.0.1:0
workers: 2
health: {interval: 50ms, timeout: 5s}
routes:
  - match: /status
    pipeline:
      - status: json
  - match: /
    pipeline:
      - text: %q
`, text)
}

// gate makes a FIFO for workerWaitVar and returns its path and release,
// which lets the worker waiting on it go on (once it waits).
func gate(t *testing.T) (string, func()) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gate")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	open := func() bool { // only once the worker has it open for reading
		f, err := os.OpenFile(path, os.O_WRONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			return false
		}
		f.Close()
		return true
	}
	released := false
	t.Cleanup(func() {
		if !released {
			open() // a worker still waiting after a failure goes on
		}
	})
	return path, func() {
		t.Helper()
		sluicetest.WaitFor(t, "the worker waiting on its gate", open)
		released = true
	}
}

// nextWorkers gives the next workers started these extra environments,
// in order.
func (tm *testMaster) nextWorkers(env ...[]string) {
	tm.mu.Lock()
	tm.env = env
	tm.mu.Unlock()
}

// A reload given up (one new worker failed) drains the new workers
// that started, as a reload drains the old ones, rather than stopping
// them: they accept on the shared sockets before they are healthy, so a
// client may hold a keep-alive connection to one, and the next request
// on it must be answered (with Connection: close), not cut.
func TestReloadAbortDrainsNewWorkers(t *testing.T) {
	tm, addr := startMaster(t, twoWorkers("v0"))
	path, release := gate(t)
	// Worker 3 serves; worker 4 waits on the gate, then fails.
	tm.nextWorkers(nil, []string{workerWaitVar + "=" + path, workerFailVar + "=1"})
	tm.setConfig(twoWorkers("v1"))
	tm.Reload()

	// Worker 3 serves (it accepts before it says so, and logs this just
	// before); the old workers are stopped while a connection is made,
	// so that worker 3 is the one to accept it.
	tm.waitLog(t, `msg="sized for the workers" workers=2`, 3)
	for id := 1; id <= 2; id++ {
		pid := tm.pid(t, id)
		syscall.Kill(pid, syscall.SIGSTOP)
		t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) }) // should the test stop short
		sluicetest.WaitFor(t, fmt.Sprintf("worker %d stopped", id), func() bool { return procState(pid) == 'T' })
	}
	idle, idleR := dial(t, addr)
	resp, body, err := get(idle, idleR, "/")
	for id := 1; id <= 2; id++ {
		syscall.Kill(tm.pid(t, id), syscall.SIGCONT)
	}
	if err != nil || body != "v1" || resp.Close {
		t.Fatalf("a keep-alive connection to the new worker: %v %q", err, body)
	}
	defer idle.Close()

	release()
	tm.waitLog(t, `msg="reload failed; the running workers keep serving" master=`, 1)
	retired := regexp.MustCompile(`msg="shutting down".* worker=3\n`)
	sluicetest.WaitFor(t, "worker 3 retired", func() bool { return retired.MatchString(tm.log.String()) })

	// A request may reach the connection before the drain begins, and is
	// answered as usual; then comes Connection: close.
	for n := 1; ; n++ {
		resp, body, err := get(idle, idleR, "/")
		if err != nil {
			t.Fatalf("the connection idle on the new worker when the reload was given up: %v; want it kept while the worker drains\n%s", err, tm.log)
		}
		if body != "v1" {
			t.Fatalf("the connection idle on the new worker: %q, want v1", body)
		}
		if resp.Close {
			break
		}
		if n == 100 {
			t.Fatal("the draining new worker never closes the idle connection")
		}
	}
	c, cr := dial(t, addr)
	if _, body, err := get(c, cr, "/"); err != nil || body != "v0" {
		t.Errorf("after the reload was given up: %v %q, want v0", err, body)
	}
	c.Close()
	idle.Close()
	tm.waitLog(t, `msg="worker stopped"`, 1) // worker 3 drained and exited
}

// procState returns the state of process pid (R, S, T...), or 0.
func procState(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	i := bytes.LastIndexByte(b, ')')
	if i < 0 || i+2 >= len(b) {
		return 0
	}
	return b[i+2]
}

// statusView returns the master's view of its workers, by id, as a
// worker's status page shows it.
func statusView(addr string) map[int]string {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute))
	_, body, err := get(c, bufio.NewReader(c), "/status")
	if err != nil {
		return nil
	}
	var snap struct {
		Workers []components.WorkerStatus `json:"workers"`
	}
	if json.Unmarshal([]byte(body), &snap) != nil {
		return nil
	}
	states := map[int]string{}
	for _, w := range snap.Workers {
		states[w.ID] = w.State
	}
	return states
}

// A reload promotes the new workers only once every one of them is
// healthy: while one is slow to start, the other healthy already, the
// old workers serve on, not retired. Either slot may be the slow one.
func TestReloadPromotesOnceAllHealthy(t *testing.T) {
	for slow := range 2 {
		t.Run(fmt.Sprintf("slot%d", slow), func(t *testing.T) {
			tm, addr := startMaster(t, twoWorkers("v0"))
			path, release := gate(t)
			env := [][]string{nil, nil}
			env[slow] = []string{workerWaitVar + "=" + path}
			tm.nextWorkers(env...)
			slowID, fastID := 3+slow, 4-slow
			tm.setConfig(twoWorkers("v1"))
			tm.Reload()

			var view map[int]string
			sluicetest.WaitFor(t, fmt.Sprintf("the status page showing worker %d serving", fastID), func() bool {
				view = statusView(addr)
				return view[fastID] == "serving"
			})
			if view[1] != "serving" || view[2] != "serving" || view[slowID] != "starting" {
				t.Errorf("with worker %d healthy and %d not: workers %v; want 1 and 2 serving, %d starting", fastID, slowID, view, slowID)
			}
			if log := tm.log.String(); strings.Contains(log, "msg=reloaded") || strings.Contains(log, `msg="shutting down"`) {
				t.Errorf("the old workers were retired before worker %d was healthy:\n%s", slowID, log)
			}

			release()
			tm.waitLog(t, "msg=reloaded", 1)
			tm.waitLog(t, `msg="worker stopped"`, 2) // the old workers drained and exited
			c, cr := dial(t, addr)
			if _, body, err := get(c, cr, "/"); err != nil || body != "v1" {
				t.Errorf("after the reload: %v %q, want v1", err, body)
			}
		})
	}
}
