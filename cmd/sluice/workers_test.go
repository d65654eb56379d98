package main_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// needWorkers skips a test of worker processes, which run on Linux only
// (see daemon/supervisor).
func needWorkers(t *testing.T) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("worker processes run on Linux only")
	}
}

// workersConfig is a config with n workers and fast health checks.
func workersConfig(n int, body string) string {
	return fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", n, body)
}

// startWorkers starts a master with n workers answering body (see
// workersConfig) and waits until they are ready; it returns the server
// and its config file.
func startWorkers(t *testing.T, n int, body string) (*server, string) {
	t.Helper()
	needWorkers(t)
	file := filepath.Join(t.TempDir(), "w.yaml")
	writeConfig(t, file, workersConfig(n, body))
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	return s, file
}

var workerPid = regexp.MustCompile(`msg="worker started" master=\d+ worker=(\d+) pid=(\d+)`)

// workerPids returns the pids of the workers started, by id.
func (s *server) workerPids() map[int]int {
	out := map[int]int{}
	for _, m := range workerPid.FindAllStringSubmatch(s.stderr(), -1) {
		id, _ := strconv.Atoi(m[1])
		pid, _ := strconv.Atoi(m[2])
		out[id] = pid
	}
	return out
}

// alive reports whether a process pid exists (and is not a zombie of ours).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	_, rest, _ := stringsCut(string(b), ") ")
	return len(rest) > 0 && rest[0] != 'Z'
}

func stringsCut(s, sep string) (string, string, bool) {
	for i := 0; i+len(sep) <= len(s); i++ {
		if s[i:i+len(sep)] == sep {
			return s[:i], s[i+len(sep):], true
		}
	}
	return s, "", false
}

// load runs clients keep-alive clients against addr, each sending
// requests on one connection and opening a new one only after a response
// that says Connection: close, as a client without retries does (with
// closeEach, every request asks Connection: close). It counts requests
// that failed: a write error, or no complete response.
type load struct {
	ok, failed atomic.Int64
	stop       chan struct{}
	wg         sync.WaitGroup
	mu         sync.Mutex
	errs       []string
}

func startLoad(addr string, clients int, closeEach bool) *load {
	l := &load{stop: make(chan struct{})}
	req := "GET / HTTP/1.1\r\nHost: t\r\n\r\n"
	if closeEach {
		req = "GET / HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"
	}
	for range clients {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			var c net.Conn
			var br *bufio.Reader
			for i := 0; i < 100000; i++ {
				select {
				case <-l.stop:
					if c != nil {
						c.Close()
					}
					return
				default:
				}
				if c == nil {
					var err error
					if c, err = net.Dial("tcp", addr); err != nil {
						l.fail("dial: " + err.Error())
						continue
					}
					br = bufio.NewReader(c)
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				_, err := io.WriteString(c, req)
				var resp *http.Response
				if err == nil {
					resp, err = http.ReadResponse(br, nil)
				}
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
				}
				if err != nil {
					l.fail(err.Error())
					c.Close()
					c = nil
					continue
				}
				l.ok.Add(1)
				if resp.Close {
					c.Close()
					c = nil
				}
			}
		}()
	}
	return l
}

func (l *load) fail(s string) {
	l.failed.Add(1)
	l.mu.Lock()
	l.errs = append(l.errs, s)
	l.mu.Unlock()
}

// waitOK waits until n more requests succeeded.
func (l *load) waitOK(t *testing.T, n int64) {
	t.Helper()
	target := l.ok.Load() + n
	for deadline := time.Now().Add(20 * time.Second); l.ok.Load() < target; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the load made no progress: %d ok, %d failed", l.ok.Load(), l.failed.Load())
		}
	}
}

func (l *load) end() {
	close(l.stop)
	l.wg.Wait()
}

// A worker killed with SIGKILL under keep-alive load is replaced; only
// requests on its connections fail (at most one per client), and the
// load goes on. When the master is killed with SIGKILL, its workers exit.
func TestWorkerKilledIsReplaced(t *testing.T) {
	s, _ := startWorkers(t, 2, "hi")
	l := startLoad(s.addr, 4, false)
	l.waitOK(t, 200)
	pids := s.workerPids()
	syscall.Kill(pids[1], syscall.SIGKILL)
	s.waitLog(t, "worker exited; replacing it", 1)
	s.waitLog(t, `msg="worker started"`, 3)
	l.waitOK(t, 200)
	l.end()
	if f := l.failed.Load(); f > 4 {
		t.Errorf("%d requests failed, want at most one per client (4): %q", f, l.errs)
	}
	pids = s.workerPids()
	if len(pids) != 3 || !alive(pids[2]) || !alive(pids[3]) {
		t.Fatalf("workers %v, want 2 and 3 alive", pids)
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	s.cmd.Wait()
	for deadline := time.Now().Add(10 * time.Second); alive(pids[2]) || alive(pids[3]); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("workers outlive their master")
		}
	}
}

// A stopped worker (SIGSTOP) fails its health check and is killed and
// replaced; the master's stop then completes.
func TestWorkerStoppedIsReplaced(t *testing.T) {
	s, _ := startWorkers(t, 1, "hi")
	pid := s.workerPids()[1]
	syscall.Kill(pid, syscall.SIGSTOP)
	s.waitLog(t, "killing it", 1)
	s.waitLog(t, `msg="worker started"`, 2)
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hi" {
		t.Errorf("after the replacement: %d %q", code, body)
	}
	for deadline := time.Now().Add(10 * time.Second); alive(pid); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the stopped worker %d was not killed", pid)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// A master that does not run for longer than its workers' health
// timeout (stopped with SIGSTOP here; a paused VM or a starved CPU
// alike) kills none of them when it runs again: the heartbeats it did
// not read, and a probe its own absence made late, say nothing of the
// workers. A worker stopped for as long would be killed (the test
// above).
//
// Nothing here waits a fixed time for an assertion: the stop is known
// to have outlasted the timeout by the gap the master reports, and the
// check that no worker was killed comes after the master has shown (on
// the status page, which it refreshes at each health check) a dozen new
// heartbeats from each worker: 12 of their 100ms beats span more than
// the 1s timeout, time enough for the checks and probes that would have
// killed a worker blamed for the stop.
func TestStoppedMasterKeepsItsWorkers(t *testing.T) {
	needWorkers(t)
	file := filepath.Join(t.TempDir(), "w.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 2\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /status\n    pipeline:\n      - status\n  - match: /\n    pipeline:\n      - text: hi\n")
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	before := s.workerPids()
	master := s.cmd.Process.Pid
	syscall.Kill(master, syscall.SIGSTOP)
	time.Sleep(2500 * time.Millisecond) // the stop under test (the timeout is 1s); its length is checked below
	syscall.Kill(master, syscall.SIGCONT)
	s.waitLog(t, "the master did not run for a while", 1)
	if m := regexp.MustCompile(`did not run for a while.* gap=(\S+)`).FindStringSubmatch(s.stderr()); m == nil {
		t.Fatalf("the warning gives no gap:\n%s", s.stderr())
	} else if gap, err := time.ParseDuration(m[1]); err != nil || gap <= time.Second {
		t.Fatalf("the master reports a gap of %s, want more than the 1s timeout", m[1])
	}

	// Each worker's request count, as the master last heard it in a
	// heartbeat; a new count seen is a new heartbeat the master read.
	// The status requests themselves, on new connections, keep the
	// counts moving on both workers.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	last, beats := map[int]uint64{}, map[int]int{}
	sluicetest.WaitFor(t, "the master to read a dozen heartbeats from each worker after the stop", func() bool {
		resp, err := client.Get("http://" + s.addr + "/status?format=json")
		if err != nil {
			t.Fatalf("during the checks: %v\n%s", err, s.stderr())
		}
		var v struct {
			Workers []struct {
				ID       int
				Requests uint64
			}
		}
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range v.Workers {
			if n, ok := last[w.ID]; !ok || w.Requests != n {
				if ok {
					beats[w.ID]++
				}
				last[w.ID] = w.Requests
			}
		}
		for id := range before {
			if beats[id] < 12 {
				return false
			}
		}
		return true
	})
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hi" {
		t.Errorf("after the stop: %d %q", code, body)
	}
	if strings.Contains(s.stderr(), "killing it") {
		t.Errorf("a worker was killed for the master's stop:\n%s", s.stderr())
	}
	for id, pid := range before {
		if !alive(pid) {
			t.Errorf("worker %d (pid %d) is gone", id, pid)
		}
	}
	if after := s.workerPids(); len(after) != len(before) {
		t.Errorf("workers started: %v, then %v", before, after)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// Five reloads under keep-alive and Connection: close load, one of them
// with a broken config, fail no request: new workers take over, old ones
// drain. A keep-alive connection idle across a reload is not closed
// under its client: its next request is answered by the old worker, with
// Connection: close.
func TestReloadsLoseNothing(t *testing.T) {
	s, file := startWorkers(t, 2, "v0")
	// The config's port is 0: reloads must keep the port the master opened.
	writeAddr := func(body string) string {
		return fmt.Sprintf("listen: %s\nworkers: 2\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", s.addr, body)
	}
	idle := dialKeepAlive(t, s.addr)
	if resp, body := idle.get(t); body != "v0" || resp.Close {
		t.Fatalf("before the reloads: %q close=%v", body, resp.Close)
	}
	keep := startLoad(s.addr, 4, false)
	closing := startLoad(s.addr, 2, true)
	keep.waitOK(t, 100)
	reloads := 0
	for i := 1; i <= 5; i++ {
		if i == 3 {
			writeConfig(t, file, "listen: [\n")
			s.cmd.Process.Signal(syscall.SIGHUP)
			s.waitLog(t, "reload failed", 1)
		} else {
			writeConfig(t, file, writeAddr(fmt.Sprintf("v%d", i)))
			s.cmd.Process.Signal(syscall.SIGHUP)
			reloads++
			s.waitLog(t, "msg=reloaded", reloads)
		}
		if i == 1 {
			// The idle connection's worker drains: its next request is
			// answered, with Connection: close. (The worker logs its
			// drain just before it begins: a request may come first.)
			s.waitLog(t, `msg="shutting down" grace=`, 2)
			for n := 1; ; n++ {
				resp, body := idle.get(t)
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
		}
		keep.waitOK(t, 100)
		closing.waitOK(t, 20)
	}
	keep.end()
	closing.end()
	if f := keep.failed.Load() + closing.failed.Load(); f != 0 {
		t.Errorf("%d requests failed across reloads: %q %q\n%s", f, keep.errs, closing.errs, s.stderr())
	}
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "v5" {
		t.Errorf("after the reloads: %d %q", code, body)
	}
	s.waitLog(t, `msg="worker stopped"`, 2*reloads) // every old worker drained and exited
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// keepAlive is one client connection sending requests one at a time.
type keepAlive struct{ *sluicetest.Conn }

func dialKeepAlive(t *testing.T, addr string) *keepAlive {
	t.Helper()
	return &keepAlive{sluicetest.Dial(t, addr)}
}

// get sends GET / and returns the response and its body, giving the
// exchange 10 s however long the connection has been open.
func (k *keepAlive) get(t *testing.T) (*http.Response, string) {
	t.Helper()
	k.SetDeadline(time.Now().Add(10 * time.Second))
	return k.RoundTrip(t, "GET / HTTP/1.1\r\nHost: t\r\n\r\n")
}

// startRequestInFlight starts an echo server with that many workers (and
// the extra serve arguments) and a POST in one of them whose body the
// client has yet to send: the worker's handler is reading it (its 100
// Continue came). k is the client's connection, open for 30 s.
func startRequestInFlight(t *testing.T, workers int, args ...string) (*server, *keepAlive) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "w.yaml")
	writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nworkers: %d\nroutes:\n  - match: /\n    pipeline:\n      - echo\n", workers))
	s := start(t, append([]string{"serve", "-c", file}, args...)...)
	s.waitLog(t, "workers ready", 1)
	k := dialKeepAlive(t, s.addr)
	k.SetDeadline(time.Now().Add(30 * time.Second))
	if resp, _ := k.RoundTrip(t, "POST / HTTP/1.1\r\nHost: t\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n"); resp.StatusCode != 100 {
		t.Fatalf("interim response: %s, want 100 Continue", resp.Status)
	}
	return s, k
}

// SIGTERM to the master lets a request in flight in a worker complete:
// a POST whose body the client sends only after the worker has begun its
// shutdown is read and answered in full.
func TestStopLetsRequestsFinish(t *testing.T) {
	needWorkers(t)
	s, k := startRequestInFlight(t, 1)
	s.cmd.Process.Signal(syscall.SIGTERM)
	s.waitLog(t, `msg="shutting down" grace=`, 1) // the worker's, not the master's
	io.WriteString(k, "hello")
	resp, err := http.ReadResponse(k.R, nil) // not sluicetest.ReadResponse: a failure shows the server's log
	if err != nil {
		t.Fatalf("the request in flight failed: %v\n%s", err, s.stderr())
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 || string(b) != "hello" || !resp.Close {
		t.Errorf("in flight: %d %q close=%v %v", resp.StatusCode, b, resp.Close, err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// Once the master is told to stop, new connections are refused at once,
// while a request in flight still has the grace to finish: a balancer's
// health check sees the server go, and no connection waits unanswered in
// a listening socket nobody accepts from.
func TestStopRefusesNewConnections(t *testing.T) {
	needWorkers(t)
	s, k := startRequestInFlight(t, 2, "--shutdown-grace", "60s")
	s.cmd.Process.Signal(syscall.SIGTERM)
	sluicetest.WaitFor(t, "new connections refused while a request is in flight", func() bool {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			return true
		}
		c.Close()
		return false
	})
	io.WriteString(k, "hello")
	resp, err := http.ReadResponse(k.R, nil) // not sluicetest.ReadResponse: a failure shows the server's log
	if err != nil {
		t.Fatalf("the request in flight failed: %v\n%s", err, s.stderr())
	}
	if b, err := io.ReadAll(resp.Body); err != nil || resp.StatusCode != 200 || string(b) != "hello" {
		t.Errorf("in flight: %d %q %v", resp.StatusCode, b, err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// The status page, served by any worker, shows every worker as the
// master last heard from it; a worker killed and replaced shows as its
// slot's restart.
func TestStatusShowsEveryWorker(t *testing.T) {
	needWorkers(t)
	file := filepath.Join(t.TempDir(), "w.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 2\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /status\n    pipeline:\n      - status\n  - match: /\n    pipeline:\n      - text: hi\n")
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	type view struct {
		Worker  int
		Workers []struct {
			ID, PID, Restarts int
			State             string
			Started           time.Time
			Requests          uint64
			Memory            uint64 `json:"memory_bytes"`
		}
	}
	// waitView polls the status page until ok accepts what it shows.
	waitView := func(what string, ok func(v view) bool) view {
		t.Helper()
		var v view
		for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			_, _, body := get(t, "http://"+s.addr+"/status?format=json")
			v = view{}
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatalf("%v: %s", err, body)
			}
			if ok(v) {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("the status page never showed %s: %+v", what, v)
			}
		}
	}
	pids := s.workerPids()
	v := waitView("workers 1 and 2 serving", func(v view) bool {
		return len(v.Workers) == 2 && v.Workers[0].ID == 1 && v.Workers[1].ID == 2 &&
			v.Workers[0].State == "serving" && v.Workers[1].State == "serving"
	})
	for _, w := range v.Workers {
		// Memory is the process's RSS, which a Go server keeps well
		// above a megabyte and under a gigabyte.
		if w.PID != pids[w.ID] || w.Restarts != 0 || w.Started.IsZero() || time.Since(w.Started) > time.Hour ||
			w.Memory < 1<<20 || w.Memory > 1<<30 {
			t.Errorf("worker %d: %+v, want pid %d", w.ID, w, pids[w.ID])
		}
	}
	if v.Worker != 1 && v.Worker != 2 {
		t.Errorf("answered by worker %d", v.Worker)
	}

	syscall.Kill(pids[1], syscall.SIGKILL)
	s.waitLog(t, `msg="worker started"`, 3)
	pids = s.workerPids()
	waitView("worker 3 replacing 1", func(v view) bool {
		return len(v.Workers) == 2 && v.Workers[0].ID == 2 && v.Workers[1].ID == 3 &&
			v.Workers[1].State == "serving" && v.Workers[1].PID == pids[3] && v.Workers[1].Restarts == 1
	})

	// Prometheus: a series per worker, and the answering worker's own
	// counters labelled with its id.
	_, _, body := get(t, "http://"+s.addr+"/status?format=prometheus")
	for _, re := range []string{
		`(?m)^sluice_worker_requests_total\{worker="2"\} \d+$`,
		`(?m)^sluice_worker_requests_total\{worker="3"\} \d+$`,
		`(?m)^sluice_worker_resident_memory_bytes\{worker="3"\} [1-9]\d{6,9}$`,
		fmt.Sprintf(`(?m)^sluice_worker_info\{worker="3",pid="%d",state="serving"\} 1$`, pids[3]),
		`(?m)^sluice_requests_total\{worker="[23]"\} \d+$`,
	} {
		if !regexp.MustCompile(re).MatchString(body) {
			t.Errorf("the Prometheus output lacks %s:\n%s", re, body)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// upgradable starts a master from a copy of the binary in a directory of
// its own, for a test to replace, with a pid file; it returns the
// server, the copy's path and the pid file's. The master the pid file
// names when the test ends is killed, and its workers with it.
func upgradable(t *testing.T, config func(pidFile string) string) (s *server, bin, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	bin = filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	pidFile = filepath.Join(dir, "sluice.pid")
	file := filepath.Join(dir, "w.yaml")
	writeConfig(t, file, config(pidFile))
	t.Cleanup(func() {
		if pid := readPid(pidFile); pid > 0 && (s == nil || pid != s.cmd.Process.Pid) {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	s = startCmd(t, exec.Command(bin, "serve", "-c", file))
	s.waitLog(t, "workers ready", 1)
	return s, bin, pidFile
}

func copyFile(t *testing.T, from, to string, mode os.FileMode) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, mode); err != nil {
		t.Fatal(err)
	}
}

// readPid returns the process id in a pid file, or 0.
func readPid(file string) int {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	return n
}

// A binary upgrade under keep-alive and Connection: close load fails no
// request: the new master's workers take over, the old master's drain,
// and it exits; the pid file names the new master, which serves the
// config as the file says now. (Where the pid file is during the
// hand-over, TestUpgradeFailureKeepsServing sees.)
func TestUpgradeLosesNothing(t *testing.T) {
	needWorkers(t)
	var file string
	cfg := func(body string) func(string) string {
		return func(pidFile string) string {
			return fmt.Sprintf("listen: 127.0.0.1:0\nworkers: 2\npid_file: %s\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", pidFile, body)
		}
	}
	s, bin, pidFile := upgradable(t, cfg("old"))
	file = filepath.Join(filepath.Dir(bin), "w.yaml")
	old := s.cmd.Process.Pid
	keep := startLoad(s.addr, 4, false)
	closing := startLoad(s.addr, 2, true)
	keep.waitOK(t, 100)
	closing.waitOK(t, 20)
	// The new master reads the file again: its answers tell them apart.
	// The port stays the old master's: the socket is handed over.
	writeConfig(t, file, strings.Replace(cfg("new")(pidFile), "127.0.0.1:0", s.addr, 1))
	if r := sluice(t, "upgrade", "--pid-file", pidFile); r.code != 0 || r.stdout != fmt.Sprintf("sent SIGUSR2 to process %d\n", old) {
		t.Fatalf("sluice upgrade = %d %q %q", r.code, r.stdout, r.stderr)
	}
	s.waitLog(t, "binary upgrade: new master started", 1)
	s.cmd.Wait() // the old master exits once the new one's workers are healthy
	if code := s.cmd.ProcessState.ExitCode(); code != 0 {
		t.Errorf("the old master's exit status %d:\n%s", code, s.stderr())
	}
	keep.waitOK(t, 100)
	closing.waitOK(t, 20)
	keep.end()
	closing.end()
	if f := keep.failed.Load() + closing.failed.Load(); f != 0 {
		t.Errorf("%d requests failed across the upgrade: %q %q\n%s", f, keep.errs, closing.errs, s.stderr())
	}
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "new" {
		t.Errorf("after the upgrade: %d %q", code, body)
	}
	pid := readPid(pidFile)
	if pid == 0 || pid == old || !alive(pid) {
		t.Fatalf("the pid file names %d (the old master was %d)", pid, old)
	}
	if _, err := os.Stat(pidFile + ".oldbin"); !os.IsNotExist(err) {
		t.Errorf("%s.oldbin is left: %v", pidFile, err)
	}
	if r := sluice(t, "stop", "--pid-file", pidFile); r.code != 0 {
		t.Fatalf("sluice stop = %d %q", r.code, r.stderr)
	}
	<-s.done // every process of both masters has closed the log
	if !strings.Contains(s.stderr(), fmt.Sprintf(`msg=stopped master=%d`, pid)) {
		t.Errorf("the new master did not stop:\n%s", s.stderr())
	}
}

// A binary upgrade to a program that exits at start, or to a config the
// new master rejects, leaves the old master serving with its pid file,
// the reason logged; its workers are still replaced when they die (from
// its own binary, though the file it was started from is now another).
func TestUpgradeFailureKeepsServing(t *testing.T) {
	needWorkers(t)
	s, bin, pidFile := upgradable(t, func(pidFile string) string {
		return fmt.Sprintf("listen: 127.0.0.1:0\nworkers: 1\npid_file: %s\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /\n    pipeline:\n      - text: old\n", pidFile)
	})
	old := s.cmd.Process.Pid
	keep := startLoad(s.addr, 2, false)
	keep.waitOK(t, 50)

	// A broken binary, renamed over the one the master was started from.
	// It notes where the pid file is while it runs: PATH.oldbin.
	broken := filepath.Join(filepath.Dir(bin), "broken")
	seen := filepath.Join(filepath.Dir(bin), "seen")
	writeConfig(t, broken, fmt.Sprintf("#!/bin/sh\ncat %s.oldbin %s > %s\necho 'the new binary is broken' >&2\nexit 3\n", pidFile, pidFile, seen))
	os.Chmod(broken, 0o755)
	if err := os.Rename(broken, bin); err != nil {
		t.Fatal(err)
	}
	s.cmd.Process.Signal(syscall.SIGUSR2)
	s.waitLog(t, "binary upgrade failed; the old master keeps serving", 1)
	if !strings.Contains(s.stderr(), `error="the new master exited: exit status 3"`) {
		t.Errorf("the reason is not logged:\n%s", s.stderr())
	}
	if b, err := os.ReadFile(seen); err != nil || string(b) != fmt.Sprintf("%d\n", old) {
		t.Errorf("while the new binary ran, PATH.oldbin and PATH held %q (%v), want the old pid and nothing", b, err)
	}
	if pid := readPid(pidFile); pid != old {
		t.Errorf("the pid file holds %d, want the old master's %d", pid, old)
	}
	keep.waitOK(t, 50)

	// The binary back, and a config the new master rejects.
	copyFile(t, binary, bin, 0o755)
	file := filepath.Join(filepath.Dir(bin), "w.yaml")
	writeConfig(t, file, "listen: [\n")
	s.cmd.Process.Signal(syscall.SIGUSR2)
	s.waitLog(t, "binary upgrade failed; the old master keeps serving", 2)
	if !strings.Contains(s.stderr(), `msg="binary upgrade failed; the old master keeps serving" master=`+strconv.Itoa(old)+` error="`+file+`:1:`) {
		t.Errorf("the new master's reason is not logged:\n%s", s.stderr())
	}
	if pid := readPid(pidFile); pid != old {
		t.Errorf("the pid file holds %d, want the old master's %d", pid, old)
	}
	keep.waitOK(t, 50)

	// The old master still replaces a worker: from its own binary.
	os.Remove(bin)
	syscall.Kill(s.workerPids()[1], syscall.SIGKILL)
	s.waitLog(t, "worker exited; replacing it", 1)
	s.waitLog(t, `msg="worker started"`, 2)
	keep.waitOK(t, 50)
	keep.end()
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "old" {
		t.Errorf("after the failed upgrades: %d %q", code, body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("the pid file is left: %v", err)
	}
}

// A reload applies the file's log section and pid_file to the master
// too: its records, and its workers' relayed lines, go to the new output
// in the new format, and the pid file moves.
func TestReloadMovesLogAndPidFile(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "w.yaml")
	pidA, pidB, logFile := filepath.Join(dir, "a.pid"), filepath.Join(dir, "b.pid"), filepath.Join(dir, "sluice.log")
	routes := "routes:\n  - match: /\n    pipeline:\n      - text: hi\n"
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 1\npid_file: "+pidA+"\n"+routes)
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	master := s.cmd.Process.Pid
	if pid := readPid(pidA); pid != master {
		t.Fatalf("%s holds %d, want %d", pidA, pid, master)
	}
	writeConfig(t, file, fmt.Sprintf("listen: %s\nworkers: 1\npid_file: %s\nlog: {output: %s, format: json}\n%s", s.addr, pidB, logFile, routes))
	if r := sluice(t, "reload", "--pid-file", pidA); r.code != 0 {
		t.Fatalf("sluice reload = %d %q", r.code, r.stderr)
	}
	s.waitLog(t, "reloading", 1)
	for deadline := time.Now().Add(20 * time.Second); readPid(pidB) != master; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s never named the master:\n%s", pidB, s.stderr())
		}
	}
	if _, err := os.Stat(pidA); !os.IsNotExist(err) {
		t.Errorf("the old pid file is left: %v", err)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		fmt.Sprintf(`"msg":"reloaded","master":%d,`, master),
		fmt.Sprintf(`"msg":"stopped","master":%d}`, master),
		`{"worker":2,"time":`, // the new worker's lines, relayed
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the new log lacks %s:\n%s", want, b)
		}
	}
	if strings.Contains(s.stderr(), "msg=reloaded") {
		t.Errorf("the master still logs to stderr:\n%s", s.stderr())
	}
	if _, err := os.Stat(pidB); !os.IsNotExist(err) {
		t.Errorf("the pid file is left after the stop: %v", err)
	}
}
