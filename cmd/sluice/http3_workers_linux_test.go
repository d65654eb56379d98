package main_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"

	"github.com/sluice-server/sluice/sluicetest"
)

// h3WorkersConfig is h3Config (workers: 2) with a route /echo whose CGI
// program marks its start with a file started.PID in dir, then answers
// its worker's pid and the size of the request body, once it has read
// all of it.
func h3WorkersConfig(t *testing.T, dir string) string {
	t.Helper()
	os.WriteFile(filepath.Join(dir, "echo.cgi"), []byte("#!/bin/sh\ntouch \"$DIR/started.$$\"\nn=$(wc -c)\nprintf 'Content-Type: text/plain\\n\\n'\necho $PPID $n\n"), 0o755)
	file := h3Config(t, dir, 2)
	b, _ := os.ReadFile(file)
	cfg := strings.Replace(string(b), "routes:\n", "routes:\n  - match: /echo\n    pipeline:\n      - cgi: {script: ./echo.cgi, env: {DIR: \""+dir+"\"}}\n", 1)
	writeConfig(t, file, cfg)
	return file
}

// h3Conn is one HTTP/3 connection of a test client, on a UDP socket of
// its own.
type h3Conn struct {
	conn *quic.Conn
	cc   *http3.ClientConn
	host string
}

// udpTransport is a QUIC transport on a new loopback UDP socket.
func udpTransport(t *testing.T) *quic.Transport {
	t.Helper()
	pc, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	tr := &quic.Transport{Conn: pc}
	t.Cleanup(func() { tr.Close(); pc.Close() })
	return tr
}

func dialH3(t *testing.T, ca *sluicetest.CA, addr string) *h3Conn {
	t.Helper()
	ua, err := net.ResolveUDPAddr("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tlsConf := ca.ClientConfig("localhost")
	tlsConf.NextProtos = []string{http3.NextProtoH3}
	conn, err := udpTransport(t).Dial(context.Background(), ua, tlsConf, &quic.Config{MaxIdleTimeout: 5 * time.Minute})
	if err != nil {
		t.Fatalf("dialing %s over QUIC: %v", addr, err)
	}
	t.Cleanup(func() { conn.CloseWithError(0, "") })
	return &h3Conn{conn: conn, cc: (&http3.Transport{}).NewClientConn(conn), host: addr}
}

// do sends a request on the connection (with a body, of size bytes):
// its status and body, or the error.
func (c *h3Conn) do(method, path string, body io.Reader, size int64) (int, string, error) {
	req, err := http.NewRequest(method, "https://"+c.host+path, body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = size // known, for the CGI program to start before the body is all there
	resp, err := c.cc.RoundTrip(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// migrate moves the connection to a new local address (a new UDP port),
// as a client that changes network does.
func (c *h3Conn) migrate(t *testing.T) error {
	t.Helper()
	path, err := c.conn.AddPath(udpTransport(t))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a guard against hanging
	defer cancel()
	if err := path.Probe(ctx); err != nil {
		return fmt.Errorf("probing the new path: %w", err)
	}
	return path.Switch()
}

// With workers, a client that changes its address keeps its connection
// and its worker: the master steers each datagram by the worker's tag in
// its connection ID, where the kernel's hash of addresses would send
// most of the migrated connections' datagrams to the other worker (all
// 8 kept by the hash alone once in 256).
func TestWorkersHTTP3Migration(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	s := start(t, "serve", "-c", h3Config(t, dir, 2))
	s.waitLog(t, "workers ready", 1)
	pids := map[string]bool{}
	for i := range 8 {
		c := dialH3(t, ca, s.addr)
		status, before, err := c.do("GET", "/pid", nil, 0)
		if err != nil || status != 200 {
			t.Fatalf("connection %d: %d %q %v", i, status, before, err)
		}
		pids[before] = true
		if err := c.migrate(t); err != nil {
			t.Fatalf("connection %d (worker %s): %v", i, strings.TrimSpace(before), err)
		}
		status, after, err := c.do("GET", "/pid", nil, 0)
		if err != nil || status != 200 || after != before {
			t.Fatalf("connection %d after migrating: %d %q %v, want worker %s", i, status, after, err, strings.TrimSpace(before))
		}
	}
	if len(pids) != 2 {
		t.Logf("all 8 connections on one worker (%v): the test steered less than it could", pids)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// Requests in flight on HTTP/3 connections finish across a reload: the
// old workers drain, and the master keeps steering their connections'
// datagrams to them (the rest of each request body is sent after the
// reload) while new connections go to the new workers.
func TestWorkersHTTP3Reload(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	s := start(t, "serve", "-c", h3WorkersConfig(t, dir))
	s.waitLog(t, "workers ready", 1)
	const n = 16
	type result struct {
		status int
		body   string
		err    error
	}
	results := make([]result, n)
	writers := make([]*io.PipeWriter, n)
	var wg sync.WaitGroup
	var conns []*h3Conn
	for i := range n {
		c := dialH3(t, ca, s.addr)
		conns = append(conns, c)
		r, w := io.Pipe()
		writers[i] = w
		wg.Go(func() {
			status, body, err := c.do("POST", "/echo", r, 2000)
			results[i] = result{status, body, err}
		})
		w.Write(bytes.Repeat([]byte("a"), 1000))
	}
	sluicetest.WaitFor(t, "every request's CGI program to start", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "started.*"))
		return len(m) == n
	})
	old := map[string]bool{}
	for _, pid := range s.workerPids() {
		old[strconv.Itoa(pid)] = true
	}
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	// A new connection goes to a new worker.
	c := dialH3(t, ca, s.addr)
	if status, body, err := c.do("GET", "/pid", nil, 0); err != nil || status != 200 || old[strings.TrimSpace(body)] {
		t.Errorf("a new connection after the reload: %d %q %v (old workers %v)", status, body, err, old)
	}
	for _, w := range writers {
		w.Write(bytes.Repeat([]byte("b"), 1000))
		w.Close()
	}
	wg.Wait()
	for i, r := range results {
		pid, size, _ := strings.Cut(strings.TrimSpace(r.body), " ")
		if r.err != nil || r.status != 200 || size != "2000" || !old[pid] {
			t.Errorf("request %d: %d %q %v, want 200 and 2000 bytes from an old worker (%v)", i, r.status, r.body, r.err, old)
		}
	}
	// Their clients close the connections: the old workers end.
	for _, c := range conns {
		c.conn.CloseWithError(0, "")
	}
	s.waitLog(t, `msg="worker stopped"`, 2)
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// A connection whose worker was killed ends at once: its datagrams go to
// the other workers, which share the master's QUIC secret and answer
// with a stateless reset, rather than leave the client waiting for its
// idle timeout (five minutes here).
func TestWorkersHTTP3StatelessReset(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
	s := start(t, "serve", "-c", h3Config(t, dir, 2))
	s.waitLog(t, "workers ready", 1)
	c := dialH3(t, ca, s.addr)
	status, body, err := c.do("GET", "/pid", nil, 0)
	if err != nil || status != 200 {
		t.Fatalf("%d %q %v", status, body, err)
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(body))
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	s.waitLog(t, "worker exited; replacing it", 1)
	_, _, err = c.do("GET", "/a.txt", nil, 0)
	<-c.conn.Context().Done()
	var reset *quic.StatelessResetError
	if cause := context.Cause(c.conn.Context()); !errors.As(cause, &reset) {
		t.Errorf("the connection ended with %v (request: %v), want a stateless reset", cause, err)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d", code)
	}
}

// A binary upgrade hands the UDP sockets and the QUIC secret to the new
// master: HTTP/3 requests in flight on the old workers finish (the new
// master steers their datagrams to them while they drain), new
// connections go to the new workers, the old workers end as soon as
// their clients close their connections, and a connection whose old
// worker dies gets a stateless reset from a new one once the old master
// has ended.
func TestUpgradeHTTP3(t *testing.T) {
	needWorkers(t)
	ca := sluicetest.NewCA(t)
	var dir string
	s, _, pidFile := upgradable(t, func(pidFile string) string {
		dir = filepath.Dir(pidFile)
		ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
		b, _ := os.ReadFile(h3WorkersConfig(t, dir))
		// No drain_timeout (an hour), and an idle timeout (five minutes,
		// the client's) longer than the guard below: the old workers end
		// only if they see their clients close their connections.
		return "pid_file: " + pidFile + "\nlimits: {idle_timeout: 10m}\n" + string(b)
	})
	oldMaster := s.cmd.Process.Pid
	const n = 8
	owners := make([]string, n)
	results := make([]error, n)
	bodies := make([]string, n)
	writers := make([]*io.PipeWriter, n)
	finished := make([]chan struct{}, n)
	var conns []*h3Conn
	for i := range n {
		c := dialH3(t, ca, s.addr)
		conns = append(conns, c)
		status, pid, err := c.do("GET", "/pid", nil, 0)
		if err != nil || status != 200 {
			t.Fatalf("%d %q %v", status, pid, err)
		}
		owners[i] = strings.TrimSpace(pid)
		r, w := io.Pipe()
		writers[i] = w
		finished[i] = make(chan struct{})
		go func() {
			defer close(finished[i])
			status, body, err := c.do("POST", "/echo", r, 2000)
			if err == nil && status != 200 {
				err = fmt.Errorf("status %d", status)
			}
			bodies[i], results[i] = body, err
		}()
		w.Write(bytes.Repeat([]byte("a"), 1000))
	}
	sluicetest.WaitFor(t, "every request's CGI program to start", func() bool {
		m, _ := filepath.Glob(filepath.Join(dir, "started.*"))
		return len(m) == n
	})
	s.cmd.Process.Signal(syscall.SIGUSR2)
	s.waitLog(t, "binary upgrade: the new master's workers are healthy", 1)
	c := dialH3(t, ca, s.addr)
	if status, pid, err := c.do("GET", "/pid", nil, 0); err != nil || status != 200 || slicesContains(owners, strings.TrimSpace(pid)) {
		t.Errorf("a new connection after the upgrade: %d %q %v (old workers %v)", status, pid, err, owners)
	}
	// The old worker of connection 0 dies; the other's requests finish.
	dead := owners[0]
	pid, _ := strconv.Atoi(dead)
	syscall.Kill(pid, syscall.SIGKILL)
	for _, w := range writers {
		w.Write(bytes.Repeat([]byte("b"), 1000))
		w.Close()
	}
	guard := time.After(2 * time.Minute) // against hanging, not a timing
	wait := func(what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-guard:
			t.Fatalf("waiting for %s (owners %v, killed %s; results %q %v):\n%s", what, owners, dead, bodies, results, s.stderr())
		}
	}
	for i := range n {
		if owners[i] != dead {
			wait("the requests on the live old worker", finished[i])
			if results[i] != nil || bodies[i] != owners[i]+" 2000\n" {
				t.Errorf("request %d, on old worker %s: %q %v, want its 2000 bytes counted", i, owners[i], bodies[i], results[i])
			}
		}
	}
	// Their clients close the connections of the live old worker (as
	// quic-go's client does by itself after GOAWAY): it ends, and the old
	// master with it, well before its drain_timeout (the default hour)
	// or the connections' idle timeout (five minutes) would end them.
	for i, c := range conns {
		if owners[i] != dead {
			c.conn.CloseWithError(0, "")
		}
	}
	exited := make(chan struct{})
	go func() { s.cmd.Wait(); close(exited) }()
	wait("the old master to end once its workers have", exited)
	for i := range n {
		if owners[i] == dead {
			wait("the requests on the killed worker", finished[i])
			var reset *quic.StatelessResetError
			if !errors.As(results[i], &reset) {
				t.Errorf("request %d, on the killed worker: %q %v, want a stateless reset", i, bodies[i], results[i])
			}
		}
	}
	if t.Failed() {
		t.Logf("the log:\n%s", s.stderr())
	}
	if newMaster := readPid(pidFile); newMaster == oldMaster || newMaster == 0 {
		t.Fatalf("the pid file names %d (the old master was %d)", newMaster, oldMaster)
	}
	if r := sluice(t, "stop", "--pid-file", pidFile); r.code != 0 {
		t.Fatalf("sluice stop = %d %q", r.code, r.stderr)
	}
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// A client whose server was restarted gets a stateless reset from the new
// process and ends its connection at once, rather than wait for its idle
// timeout (a minute here; the server's), in one process and with
// workers: the server keeps its QUIC secret, from which the reset's token
// is made, in a file of mode 0600 under its state directory. The server
// is killed, so that it closes no connection itself (its workers die with
// their master).
func TestHTTP3RestartStatelessReset(t *testing.T) {
	for _, workers := range []int{0, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			dir := t.TempDir()
			state := filepath.Join(dir, "state")
			ca := sluicetest.NewCA(t)
			ca.IssueFiles(t, dir, "localhost", "127.0.0.1")
			file := h3Config(t, dir, workers)
			run := func() *server {
				cmd := exec.Command(binary, "serve", "-c", file)
				cmd.Env = append(os.Environ(), "STATE_DIRECTORY="+state)
				s := startCmd(t, cmd)
				if workers > 0 {
					s.waitLog(t, "workers ready", 1)
				}
				return s
			}
			s := run()
			c := dialH3(t, ca, s.addr)
			if status, body, err := c.do("GET", "/a.txt", nil, 0); err != nil || status != 200 {
				t.Fatalf("before the restart: %d %q %v", status, body, err)
			}
			keys, _ := filepath.Glob(filepath.Join(state, "quic", "*.key"))
			if len(keys) != 1 {
				t.Fatalf("secret files %v, want one under %s/quic", keys, state)
			}
			if fi, err := os.Stat(keys[0]); err != nil || fi.Mode().Perm() != 0o600 {
				t.Errorf("the secret's file: %v %v, want mode 0600", fi.Mode(), err)
			}
			pids := s.workerPids()
			s.cmd.Process.Kill()
			s.wait(t)
			sluicetest.WaitFor(t, "the workers to die with their master", func() bool {
				for _, pid := range pids {
					if alive(pid) {
						return false
					}
				}
				return true
			})
			// The new process listens on the same port.
			b, _ := os.ReadFile(file)
			writeConfig(t, file, strings.Replace(string(b), "127.0.0.1:0", s.addr, 1))
			s = run()
			if s.addr != c.host {
				t.Fatalf("restarted on %s, not %s", s.addr, c.host)
			}
			_, _, err := c.do("GET", "/a.txt", nil, 0)
			<-c.conn.Context().Done()
			var reset *quic.StatelessResetError
			if cause := context.Cause(c.conn.Context()); !errors.As(cause, &reset) {
				t.Errorf("the connection ended with %v (request: %v), want a stateless reset", cause, err)
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d", code)
			}
		})
	}
}
