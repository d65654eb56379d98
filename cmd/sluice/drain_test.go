package main_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/sluice-server/sluice/sluicetest"
)

// echoUpstream is a WebSocket server that echoes every message.
func echoUpstream(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		for {
			typ, b, err := ws.Read(context.Background())
			if err != nil {
				return
			}
			if err := ws.Write(context.Background(), typ, b); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// workerStates returns how many workers the status page shows in each
// state, and the connections the draining ones hold.
func workerStates(t *testing.T, addr string) map[string]int {
	t.Helper()
	_, body := getOnce(t, addr, "GET", "/status?format=json")
	var st struct {
		Workers []struct {
			State       string `json:"state"`
			Connections int64  `json:"connections"`
		} `json:"workers"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil {
		t.Fatalf("status: %v: %q", err, body)
	}
	out := map[string]int{}
	for _, w := range st.Workers {
		out[w.State]++
		if w.State == "draining" {
			out["draining connections"] += int(w.Connections)
		}
	}
	return out
}

// With workers, the WebSocket tunnels of a worker a reload replaced
// outlive the grace period: the old worker accepts nothing new, keeps
// them until they end (then exits), and shows as draining meanwhile. A
// stop of the master ends the drain within the grace period.
func TestTunnelsOutliveReloads(t *testing.T) {
	needWorkers(t)
	up := echoUpstream(t)
	file := filepath.Join(t.TempDir(), "w.yaml")
	conf := func(body string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
workers: 2
health: {interval: 100ms, timeout: 1s}
drain_timeout: 1h
routes:
  - match: /ws
    pipeline:
      - proxy: %s
  - match: /status
    pipeline:
      - status: {}
  - match: /
    pipeline:
      - text: %q
`, up.URL, body)
	}
	writeConfig(t, file, conf("one"))
	s := start(t, "serve", "-c", file, "--shutdown-grace", "1s")
	s.waitLog(t, "workers ready", 1)

	ctx := context.Background()
	var tunnels []*websocket.Conn
	for range 20 {
		ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		tunnels = append(tunnels, ws)
	}
	echo := func(when string) {
		t.Helper()
		for i, ws := range tunnels {
			msg := fmt.Sprintf("%s %d", when, i)
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err := ws.Write(wctx, websocket.MessageText, []byte(msg))
			var got []byte
			if err == nil {
				_, got, err = ws.Read(wctx)
			}
			cancel()
			if err != nil || string(got) != msg {
				t.Fatalf("%s: tunnel %d of %d: %q, %v", when, i, len(tunnels), got, err)
			}
		}
	}
	echo("before")
	for i := 1; i <= 3; i++ {
		writeConfig(t, file, conf(fmt.Sprintf("v%d", i+1)))
		s.cmd.Process.Signal(syscall.SIGHUP)
		s.waitLog(t, `msg=reloaded`, i)
		// A replaced worker may take a connection or two before the
		// master's word to drain reaches it: new connections reach the
		// new workers from then on.
		sluicetest.WaitFor(t, fmt.Sprintf("new connections to get v%d", i+1), func() bool {
			_, body := getOnce(t, s.addr, "GET", "/")
			return body == fmt.Sprintf("v%d", i+1)
		})
	}
	time.Sleep(1500 * time.Millisecond) // past the grace period (1s)
	echo("after three reloads and the grace period")
	if st := workerStates(t, s.addr); st["draining"] == 0 || st["serving"] != 2 {
		t.Errorf("workers %v, want 2 serving and the old ones that hold tunnels draining", st)
	}
	// The workers that hold nothing exit at once: only the first
	// generation held the tunnels; the status page counts them.
	sluicetest.WaitFor(t, "the empty draining workers to exit, and the others to show their tunnels", func() bool {
		st := workerStates(t, s.addr)
		return st["draining"] <= 2 && st["draining connections"] == len(tunnels)
	})
	// A stop ends the drain within the grace period, not drain_timeout.
	start := time.Now()
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the stop took %v with draining workers, want about the grace period (1s)", took)
	}
	if !strings.Contains(s.stderr(), "connections cut") {
		t.Errorf("the stop did not say it cut the tunnels:\n%s", s.stderr())
	}
}

// A binary upgrade keeps the old master's tunnels as a reload does: its
// workers drain, holding them past the grace period, and it exits once
// the last has closed.
func TestTunnelsOutliveUpgrade(t *testing.T) {
	needWorkers(t)
	up := echoUpstream(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	pidFile := filepath.Join(dir, "sluice.pid")
	file := filepath.Join(dir, "w.yaml")
	conf := func(listen, body string) string {
		return fmt.Sprintf("listen: %s\nworkers: 2\npid_file: %s\nhealth: {interval: 100ms, timeout: 1s}\nroutes:\n  - match: /ws\n    pipeline:\n      - proxy: %s\n  - match: /\n    pipeline:\n      - text: %q\n", listen, pidFile, up.URL, body)
	}
	writeConfig(t, file, conf("127.0.0.1:0", "old"))
	t.Cleanup(func() {
		if pid := readPid(pidFile); pid > 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})
	s := startCmd(t, exec.Command(bin, "serve", "-c", file, "--shutdown-grace", "1s"))
	s.waitLog(t, "workers ready", 1)
	old := s.cmd.Process.Pid

	ctx := context.Background()
	var tunnels []*websocket.Conn
	for range 10 {
		ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		tunnels = append(tunnels, ws)
	}
	writeConfig(t, file, conf(s.addr, "new"))
	if r := sluice(t, "upgrade", "--pid-file", pidFile); r.code != 0 {
		t.Fatalf("sluice upgrade = %d %q", r.code, r.stderr)
	}
	sluicetest.WaitFor(t, "the new master to take over", func() bool {
		pid := readPid(pidFile)
		return pid != 0 && pid != old && strings.Contains(s.stderr(), "binary upgrade: new master started")
	})
	sluicetest.WaitFor(t, "new connections to reach the new workers", func() bool {
		_, body := getOnce(t, s.addr, "GET", "/")
		return body == "new"
	})
	time.Sleep(1500 * time.Millisecond) // past the grace period (1s)
	for i, ws := range tunnels {
		msg := fmt.Sprintf("after the upgrade %d", i)
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err := ws.Write(wctx, websocket.MessageText, []byte(msg))
		var got []byte
		if err == nil {
			_, got, err = ws.Read(wctx)
		}
		cancel()
		if err != nil || string(got) != msg {
			t.Fatalf("tunnel %d: %q, %v", i, got, err)
		}
	}
	if !alive(old) {
		t.Fatal("the old master exited while its workers held tunnels")
	}
	for _, ws := range tunnels {
		ws.Close(websocket.StatusNormalClosure, "")
	}
	sluicetest.WaitFor(t, "the old master to exit once its tunnels closed", func() bool { return !alive(old) })
	if r := sluice(t, "stop", "--pid-file", pidFile); r.code != 0 {
		t.Fatalf("sluice stop = %d %q", r.code, r.stderr)
	}
}

// An event stream and a long download, begun before a reload, run to
// their end after the grace period: the old worker keeps them.
func TestStreamsOutliveReloads(t *testing.T) {
	needWorkers(t)
	const events = 30 // one each 100 ms: 3 s, past the 1 s grace
	sse := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for i := range events {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(100 * time.Millisecond)
		}
	}))
	defer sse.Close()
	dir := t.TempDir()
	const size = 64 << 20
	big := make([]byte, size)
	for i := range big {
		big[i] = byte(i * 7)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.bin"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "w.yaml")
	conf := func(body string) string {
		return fmt.Sprintf(`listen: 127.0.0.1:0
workers: 2
health: {interval: 100ms, timeout: 1s}
routes:
  - match: /events
    pipeline:
      - proxy: %s
  - match: /big.bin
    pipeline:
      - files: %s
  - match: /
    pipeline:
      - text: %q
`, sse.URL, dir, body)
	}
	writeConfig(t, file, conf("one"))
	s := start(t, "serve", "-c", file, "--shutdown-grace", "1s")
	s.waitLog(t, "workers ready", 1)

	type result struct {
		what string
		err  error
	}
	done := make(chan result, 2)
	client := &http.Client{Timeout: 60 * time.Second}
	go func() { // the event stream, read as it comes
		resp, err := client.Get("http://" + s.addr + "/events")
		if err != nil {
			done <- result{"events", err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err == nil && strings.Count(string(b), "data: ") != events {
			err = fmt.Errorf("%d events of %d", strings.Count(string(b), "data: "), events)
		}
		done <- result{"events", err}
	}()
	go func() { // the download, read slowly
		resp, err := client.Get("http://" + s.addr + "/big.bin")
		if err != nil {
			done <- result{"download", err}
			return
		}
		defer resp.Body.Close()
		buf := make([]byte, 1<<20)
		var got []byte
		for next := 4 << 20; ; {
			n, err := resp.Body.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				done <- result{"download", fmt.Errorf("after %d bytes: %w", len(got), err)}
				return
			}
			if len(got) >= next { // 100 ms each 4 MB: 1.6 s in all
				next += 4 << 20
				time.Sleep(100 * time.Millisecond)
			}
		}
		if !bytes.Equal(got, big) {
			err = fmt.Errorf("%d bytes, not the file's %d", len(got), size)
		}
		done <- result{"download", err}
	}()
	time.Sleep(300 * time.Millisecond) // both under way
	writeConfig(t, file, conf("two"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, `msg=reloaded`, 1)
	for range 2 {
		if r := <-done; r.err != nil {
			t.Errorf("%s across the reload: %v", r.what, r.err)
		}
	}
}

// drain_max_memory bounds what draining workers hold together: over it,
// the master ends the oldest drain, and its tunnels are cut after the
// grace period rather than at drain_timeout. With a bound of 1 MB, which
// any worker is over, the first reload's drain ends at the next health
// check.
func TestDrainMaxMemoryEndsTheOldestDrain(t *testing.T) {
	needWorkers(t)
	up := echoUpstream(t)
	file := filepath.Join(t.TempDir(), "w.yaml")
	conf := func(body string) string {
		return fmt.Sprintf("listen: 127.0.0.1:0\nworkers: 2\nhealth: {interval: 100ms, timeout: 1s}\ndrain_timeout: 1h\ndrain_max_memory: 1MB\nroutes:\n  - match: /ws\n    pipeline:\n      - proxy: %s\n  - match: /status\n    pipeline:\n      - status: {}\n  - match: /\n    pipeline:\n      - text: %q\n", up.URL, body)
	}
	writeConfig(t, file, conf("one"))
	s := start(t, "serve", "-c", file, "--shutdown-grace", "1s")
	s.waitLog(t, "workers ready", 1)

	ctx := context.Background()
	var tunnels []*websocket.Conn
	for range 4 {
		ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/ws", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.CloseNow()
		tunnels = append(tunnels, ws)
	}
	writeConfig(t, file, conf("two"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, `msg=reloaded`, 1)
	s.waitLog(t, "ending the oldest drain", 1)
	// Each tunnel ends: its read fails once the worker's grace is over.
	for i, ws := range tunnels {
		rctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		_, _, err := ws.Read(rctx)
		cancel()
		if err == nil || errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("tunnel %d: read %v, want the connection closed by the ended drain", i, err)
		}
	}
	sluicetest.WaitFor(t, "no worker left draining", func() bool {
		st := workerStates(t, s.addr)
		return st["draining"] == 0 && st["serving"] == 2
	})
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}
