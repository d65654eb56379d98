// Command reloaddrops measures what a configuration reload does to
// long-lived connections: it opens WebSocket tunnels through a server's
// reverse proxy to an echo upstream of its own, reloads the server
// several times, then (where the server has one) upgrades its binary in
// place, waits past every grace period, and counts the tunnels that still
// echo, and the memory the server's processes hold before, with the
// tunnels, and after. It runs Sluice with workers and in one process,
// nginx (nginx -s reload; no binary upgrade under daemon off) and
// Caddy (caddy reload; no binary upgrade), each on loopback ports of its
// own, and writes a Markdown table.
//
//	go -C bench run ./cmd/reloaddrops --sluice ../bin/sluice --out ../docs/benchmarks/reload
//
// A server whose program is missing is left out, with the reason.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

func main() {
	sluice := flag.String("sluice", "bin/sluice", "the sluice `binary`")
	tunnels := flag.Int("tunnels", 100, "WebSocket tunnels opened before the reloads")
	reloads := flag.Int("reloads", 3, "reloads, one a second")
	upgrade := flag.Bool("upgrade", true, "after the reloads, upgrade the binary in place where the server can")
	download := flag.Int64("download", 1<<30, "the `bytes` of a file downloaded slowly across the changes (0: none)")
	out := flag.String("out", "", "a `directory` to write README.md into (default: stdout only)")
	flag.Parse()
	if err := run(*sluice, *tunnels, *reloads, *upgrade, *download, *out); err != nil {
		fmt.Fprintln(os.Stderr, "reloaddrops:", err)
		os.Exit(1)
	}
}

// result is one server's outcome.
type result struct {
	name, version string
	opened, alive int
	procs         [2]int    // processes of the server before the reloads and after
	rss           [3]uint64 // their resident memory: at start, with the tunnels, after
	upgraded      string    // "yes", or why not
	events        string    // the event stream across the changes: "whole", or how it ended
	download      string    // the download across the changes: "whole", or how it ended
	newOK         bool
	skipped       string
}

func run(sluice string, tunnels, reloads int, upgrade bool, download int64, out string) error {
	sluice, err := filepath.Abs(sluice)
	if err != nil {
		return err
	}
	// The event stream and the download last about as long as the
	// changes and the settling after them.
	streamFor = time.Duration(reloads+1)*2*time.Second + 8*time.Second
	up := httptest.NewServer(http.HandlerFunc(echo))
	defer up.Close()
	files, err := os.MkdirTemp("", "reloaddrops-files-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(files)
	// nginx's workers, started as root, read it as nobody.
	if err := os.Chmod(files, 0o755); err != nil {
		return err
	}
	if download > 0 {
		if err := writeBig(filepath.Join(files, "big.bin"), download); err != nil {
			return err
		}
	}
	var results []result
	for _, s := range servers(sluice, up.URL, files) {
		if !upgrade {
			s.upgrade = nil
		}
		r := measure(s, tunnels, reloads, download)
		fmt.Fprintf(os.Stderr, "%s: %d of %d tunnels echo after %d reloads, upgrade %s, events %s, download %s (%s)\n",
			r.name, r.alive, r.opened, reloads, r.upgraded, r.events, r.download, r.skipped)
		results = append(results, r)
	}
	table := report(results, tunnels, reloads, upgrade, download)
	fmt.Print(table)
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "README.md"), []byte(table), 0o644)
}

// streamFor is how long the upstream's event stream lasts (run sets it).
var streamFor = 20 * time.Second

// eventGap is the time between two events of the stream.
const eventGap = 100 * time.Millisecond

// echo is the upstream: a WebSocket that echoes every message, and at
// /events a stream of Server-Sent Events, "data: N", one each eventGap
// for streamFor, then "data: end".
func echo(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/events" {
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		for i := range int(streamFor / eventGap) {
			fmt.Fprintf(w, "data: %d\n\n", i)
			w.(http.Flusher).Flush()
			time.Sleep(eventGap)
		}
		io.WriteString(w, "data: end\n\n")
		return
	}
	if r.Header.Get("Upgrade") == "" {
		io.WriteString(w, "upstream\n")
		return
	}
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
		if ws.Write(context.Background(), typ, b) != nil {
			return
		}
	}
}

// server is one server under test: how to start and reload it in dir,
// listening on addr.
type server struct {
	name    string
	version func() (string, error)
	// start writes its config into dir and returns the command serving
	// addr; reload reloads it (the config is unchanged but for a body).
	start  func(dir, addr string, gen int) (*exec.Cmd, error)
	reload func(dir string, cmd *exec.Cmd, gen int) error
	// upgrade starts the server's binary anew in place of the running
	// one, with the config of generation gen; nil when the server has no
	// binary upgrade (why is noUpgrade).
	upgrade   func(dir string, cmd *exec.Cmd, gen int) error
	noUpgrade string
	// settle is how long after the last reload the tunnels are checked:
	// past every grace period of the server.
	settle time.Duration
}

func servers(sluice, upstream, files string) []server {
	sluiceConf := func(workers int) func(dir, addr string, gen int) string {
		return func(dir, addr string, gen int) string {
			w := ""
			if workers > 0 {
				w = fmt.Sprintf("workers: %d\n", workers)
			}
			return fmt.Sprintf("listen: %s\n%sroutes:\n  - match: /ws\n    pipeline:\n      - proxy: %s\n  - match: /events\n    pipeline:\n      - proxy: %s\n"+
				"  - match: /big.bin\n    pipeline:\n      - files: %s\n  - match: /\n    pipeline:\n      - text: \"generation %d\"\n", addr, w, upstream, upstream, files, gen)
		}
	}
	sluiceServer := func(name string, workers int) server {
		conf := sluiceConf(workers)
		return server{
			name:    name,
			version: func() (string, error) { return firstLine(sluice, "version") },
			start: func(dir, addr string, gen int) (*exec.Cmd, error) {
				file := filepath.Join(dir, "sluice.yaml")
				if err := os.WriteFile(file, []byte(conf(dir, addr, gen)), 0o644); err != nil {
					return nil, err
				}
				cmd := exec.Command(sluice, "serve", "-c", file, "--shutdown-grace", "2s")
				// Run as root (as this tool often is), sluice refuses a
				// config without user: unless told so.
				cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1")
				return cmd, nil
			},
			reload: func(dir string, cmd *exec.Cmd, gen int) error {
				if err := nextGeneration(filepath.Join(dir, "sluice.yaml"), gen); err != nil {
					return err
				}
				return cmd.Process.Signal(syscall.SIGHUP)
			},
			settle: 4 * time.Second, // past the 2 s grace
		}
	}
	sluiceWorkers := sluiceServer("sluice (workers: 2)", 2)
	sluiceWorkers.upgrade = func(dir string, cmd *exec.Cmd, gen int) error {
		if err := nextGeneration(filepath.Join(dir, "sluice.yaml"), gen); err != nil {
			return err
		}
		return cmd.Process.Signal(syscall.SIGUSR2)
	}
	sluiceOne := sluiceServer("sluice (one process)", 0)
	sluiceOne.noUpgrade = "needs workers"
	nginxConf := func(dir, addr string, gen int) string {
		u := strings.TrimPrefix(upstream, "http://")
		return fmt.Sprintf(`daemon off;
master_process on;
worker_processes 2;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path %[1]s/tmp;
    proxy_temp_path %[1]s/tmp;
    fastcgi_temp_path %[1]s/tmp;
    uwsgi_temp_path %[1]s/tmp;
    scgi_temp_path %[1]s/tmp;
    server {
        listen %[2]s;
        location /ws {
            proxy_pass http://%[3]s;
            proxy_http_version 1.1;
            proxy_set_header Upgrade $http_upgrade;
            proxy_set_header Connection "upgrade";
            proxy_read_timeout 1h;
        }
        location /events {
            proxy_pass http://%[3]s;
            proxy_buffering off;
            proxy_read_timeout 1h;
        }
        location = /big.bin { root %[5]s; }
        location / { return 200 "generation %[4]d"; }
    }
}
`, dir, addr, u, gen, files)
	}
	caddyConf := func(dir, addr string, gen int) string {
		return fmt.Sprintf(`{
	admin localhost:%[4]d
	auto_https off
}
http://%[1]s {
	bind 127.0.0.1
	reverse_proxy /ws %[2]s
	reverse_proxy /events %[2]s {
		flush_interval -1
	}
	root * %[5]s
	file_server /big.bin
	respond / "generation %[3]d"
}
`, addr, upstream, gen, adminPort(addr), files)
	}
	return []server{
		sluiceWorkers,
		sluiceOne,
		{
			name:    "nginx (2 workers)",
			version: func() (string, error) { return firstLine("nginx", "-v") },
			start: func(dir, addr string, gen int) (*exec.Cmd, error) {
				os.MkdirAll(filepath.Join(dir, "tmp"), 0o755)
				file := filepath.Join(dir, "nginx.conf")
				if err := os.WriteFile(file, []byte(nginxConf(dir, addr, gen)), 0o644); err != nil {
					return nil, err
				}
				return exec.Command("nginx", "-p", dir, "-c", file), nil
			},
			reload: func(dir string, _ *exec.Cmd, gen int) error {
				file := filepath.Join(dir, "nginx.conf")
				if err := nextGeneration(file, gen); err != nil {
					return err
				}
				return exec.Command("nginx", "-p", dir, "-c", file, "-s", "reload").Run()
			},
			// nginx ignores SIGUSR2 under daemon off ("the changing
			// binary signal is ignored"), and this tool runs it so to
			// keep it in a process group of its own.
			noUpgrade: "not under `daemon off`",
			settle:    4 * time.Second,
		},
		{
			name:    "caddy",
			version: func() (string, error) { return firstLine("caddy", "version") },
			start: func(dir, addr string, gen int) (*exec.Cmd, error) {
				file := filepath.Join(dir, "Caddyfile")
				if err := os.WriteFile(file, []byte(caddyConf(dir, addr, gen)), 0o644); err != nil {
					return nil, err
				}
				cmd := exec.Command("caddy", "run", "--config", file, "--adapter", "caddyfile")
				cmd.Env = append(os.Environ(), "HOME="+dir, "XDG_DATA_HOME="+dir, "XDG_CONFIG_HOME="+dir)
				return cmd, nil
			},
			reload: func(dir string, cmd *exec.Cmd, gen int) error {
				file := filepath.Join(dir, "Caddyfile")
				if err := nextGeneration(file, gen); err != nil {
					return err
				}
				b, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				admin := ""
				for _, l := range strings.Split(string(b), "\n") {
					if f := strings.Fields(l); len(f) == 2 && f[0] == "admin" {
						admin = f[1]
					}
				}
				rl := exec.Command("caddy", "reload", "--config", file, "--adapter", "caddyfile", "--address", admin, "--force")
				rl.Env = cmd.Env
				if out, err := rl.CombinedOutput(); err != nil {
					return fmt.Errorf("caddy reload: %v: %s", err, out)
				}
				return nil
			},
			noUpgrade: "has none",
			settle:    4 * time.Second,
		},
	}
}

// nextGeneration rewrites the config file so that it answers
// "generation gen" where it answered gen-1.
func nextGeneration(file string, gen int) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	next := strings.Replace(string(b), fmt.Sprintf("generation %d", gen-1), fmt.Sprintf("generation %d", gen), 1)
	return os.WriteFile(file, []byte(next), 0o644)
}

// adminPort is a port for Caddy's admin endpoint beside addr's.
func adminPort(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	var n int
	fmt.Sscan(p, &n)
	return n + 1
}

// startOn starts s on a free loopback port and waits for its first
// answer. A port found free can be taken by another program before the
// server binds it (tests of other packages run beside this one), so a
// server that fails to bind is started again on another port, up to
// three times. The caller kills the returned command's process group.
func startOn(s server, dir string) (*exec.Cmd, string, error) {
	var err error
	for range 3 {
		var addr string
		if addr, err = freeAddr(); err != nil {
			return nil, "", err
		}
		var cmd *exec.Cmd
		if cmd, err = s.start(dir, addr, 1); err != nil {
			return nil, "", err
		}
		// The server's output is kept in dir, so that a server that
		// does not start says why.
		var out *os.File
		if out, err = os.Create(filepath.Join(dir, "output.log")); err != nil {
			return nil, "", err
		}
		cmd.Stdout, cmd.Stderr = out, out
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		err = cmd.Start()
		out.Close()
		if err != nil {
			return nil, "", err
		}
		// A loaded machine (CI's) may take long to start a server.
		if err = waitBody(addr, "generation 1", 60*time.Second); err == nil {
			return cmd, addr, nil
		}
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
		b, _ := os.ReadFile(out.Name())
		err = fmt.Errorf("did not start: %v; its output ends: %s", err, lastBytes(string(b), 600))
		if !strings.Contains(strings.ToLower(string(b)), "address already in use") {
			return nil, "", err
		}
	}
	return nil, "", err
}

// measure starts s, opens the tunnels, reloads it and counts those that
// still echo.
func measure(s server, tunnels, reloads int, download int64) (r result) {
	r.name = s.name
	v, err := s.version()
	if err != nil {
		r.skipped = "not installed: " + err.Error()
		return r
	}
	r.version = v
	dir, err := os.MkdirTemp("", "reloaddrops-")
	if err != nil {
		r.skipped = err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	cmd, addr, err := startOn(s, dir)
	if err != nil {
		r.skipped = err.Error()
		return r
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	r.rss[0] = groupRSS(cmd.Process.Pid)
	ctx := context.Background()
	var conns []*websocket.Conn
	for range tunnels {
		ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", nil)
		if err != nil {
			r.skipped = "a tunnel failed: " + err.Error()
			break
		}
		defer ws.CloseNow()
		if echoes(ws, "hello") {
			conns = append(conns, ws)
		}
	}
	r.opened = len(conns)
	events, big := make(chan string, 1), make(chan string, 1)
	go func() { events <- readEvents("http://" + addr + "/events") }()
	if download > 0 {
		go func() { big <- readBig("http://"+addr+"/big.bin", download, streamFor) }()
	} else {
		big <- "not asked"
	}
	r.events, r.download = "not ended", "not ended"
	defer func() {
		// However the measure ends, say how the streams did.
		for _, c := range []struct {
			ch  chan string
			out *string
		}{{events, &r.events}, {big, &r.download}} {
			select {
			case v := <-c.ch:
				*c.out = v
			case <-time.After(streamFor + time.Minute):
			}
		}
	}()
	r.procs[0] = groupSize(cmd.Process.Pid)
	r.rss[1] = groupRSS(cmd.Process.Pid)
	for i := 2; i <= reloads+1; i++ {
		if err := s.reload(dir, cmd, i); err != nil {
			r.skipped = err.Error()
			return r
		}
		if err := waitBody(addr, fmt.Sprintf("generation %d", i), 20*time.Second); err != nil {
			r.skipped = fmt.Sprintf("reload %d not applied: %v", i-1, err)
			return r
		}
		time.Sleep(time.Second)
	}
	r.upgraded = s.noUpgrade
	if s.upgrade != nil {
		gen := reloads + 2
		if err := s.upgrade(dir, cmd, gen); err != nil {
			r.skipped = "upgrade: " + err.Error()
			return r
		}
		if err := waitBody(addr, fmt.Sprintf("generation %d", gen), 20*time.Second); err != nil {
			r.skipped = fmt.Sprintf("upgrade not applied: %v", err)
			return r
		}
		r.upgraded = "yes"
	} else if r.upgraded == "" {
		r.upgraded = "not asked"
	}
	r.newOK = true
	time.Sleep(s.settle)
	for i, ws := range conns {
		if echoes(ws, fmt.Sprintf("after %d", i)) {
			r.alive++
		}
	}
	r.procs[1] = groupSize(cmd.Process.Pid)
	r.rss[2] = groupRSS(cmd.Process.Pid)
	return r
}

// readEvents reads the event stream at url to its end and says
// "whole" when every event came, in order, up to "data: end", or how it
// ended.
func readEvents(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return "failed: " + err.Error()
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	next := 0
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line == "data: end" {
			if next != int(streamFor/eventGap) {
				return fmt.Sprintf("ended after %d of %d events", next, int(streamFor/eventGap))
			}
			return "whole"
		}
		if line != fmt.Sprintf("data: %d", next) {
			return fmt.Sprintf("event %d came as %q", next, line)
		}
		next++
	}
	return fmt.Sprintf("cut after %d events (%v)", next, sc.Err())
}

// blockSize is the unit of the download's pattern (writeBig).
const blockSize = 1 << 20

// fillBlock fills b, block i of the download: its index, then bytes
// that depend on their place in it.
func fillBlock(b []byte, i int64) {
	for k := range b {
		b[k] = byte(k*7 + int(i))
	}
	binary.BigEndian.PutUint64(b, uint64(i))
}

// writeBig writes the download's file: size bytes of blocks (fillBlock).
func writeBig(name string, size int64) error {
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	b := make([]byte, blockSize)
	for i := int64(0); i*blockSize < size; i++ {
		fillBlock(b, i)
		if _, err := f.Write(b[:min(blockSize, size-i*blockSize)]); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}

// readBig downloads url, size bytes, at a pace that takes about within,
// checking every byte against the pattern, and says "whole" or how it
// ended.
func readBig(url string, size int64, within time.Duration) string {
	resp, err := http.Get(url)
	if err != nil {
		return "failed: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return fmt.Sprintf("status %d", resp.StatusCode)
	}
	want, got := make([]byte, blockSize), make([]byte, blockSize)
	start := time.Now()
	var n int64
	for i := int64(0); n < size; i++ {
		part := got[:min(blockSize, size-n)]
		if _, err := io.ReadFull(resp.Body, part); err != nil {
			return fmt.Sprintf("cut after %d of %d bytes: %v", n, size, err)
		}
		fillBlock(want, i)
		if !bytes.Equal(part, want[:len(part)]) {
			return fmt.Sprintf("block %d differs", i)
		}
		n += int64(len(part))
		// The pace: byte n is due at n/size of within.
		if due := time.Duration(float64(within) * float64(n) / float64(size)); time.Since(start) < due {
			time.Sleep(due - time.Since(start))
		}
	}
	if extra, _ := io.Copy(io.Discard, resp.Body); extra != 0 {
		return fmt.Sprintf("%d bytes too many", extra)
	}
	return "whole"
}

// groupSize counts the processes of process group pgid (the server's
// master, workers and any old workers still draining).
func groupSize(pgid int) int {
	return len(groupPids(pgid))
}

// groupRSS adds up the resident memory of the processes of group pgid,
// from /proc/PID/statm.
func groupRSS(pgid int) uint64 {
	var sum uint64
	for _, pid := range groupPids(pgid) {
		b, err := os.ReadFile(filepath.Join("/proc", pid, "statm"))
		if err != nil {
			continue
		}
		var size, resident uint64
		if _, err := fmt.Sscan(string(b), &size, &resident); err == nil {
			sum += resident * uint64(os.Getpagesize())
		}
	}
	return sum
}

// groupPids lists the live processes of group pgid.
func groupPids(pgid int) []string {
	ents, _ := os.ReadDir("/proc")
	var pids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp ...: comm may hold spaces.
		_, rest, ok := strings.Cut(string(b), ") ")
		f := strings.Fields(rest)
		if !ok || len(f) < 3 || f[0] == "Z" {
			continue
		}
		if f[2] == fmt.Sprint(pgid) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// echoes reports whether ws echoes msg within 3 s.
func echoes(ws *websocket.Conn, msg string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if ws.Write(ctx, websocket.MessageText, []byte(msg)) != nil {
		return false
	}
	_, b, err := ws.Read(ctx)
	return err == nil && string(b) == msg
}

// waitBody polls GET / on addr, a new connection each time, until the
// body is want.
func waitBody(addr, want string, within time.Duration) error {
	c := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var last string
	for deadline := time.Now().Add(within); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := c.Get("http://" + addr + "/")
		if err != nil {
			last = err.Error()
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if strings.TrimSpace(string(b)) == want {
			return nil
		}
		last = fmt.Sprintf("%q", b)
	}
	return errors.New("last answer " + last)
}

// freeAddr returns a loopback address whose port, and the next, are
// free now.
func freeAddr() (string, error) {
	for range 20 {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		addr := ln.Addr().String()
		ln.Close()
		if next, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", adminPort(addr))); err == nil {
			next.Close()
			return addr, nil
		}
	}
	return "", errors.New("no two free ports in a row")
}

// lastBytes returns the end of s, at most n bytes of it.
func lastBytes(s string, n int) string {
	if len(s) > n {
		s = "..." + s[len(s)-n:]
	}
	return strings.TrimSpace(s)
}

// firstLine runs a program and returns the first line it prints.
func firstLine(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "", err
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line, nil
}

// report is the Markdown table of the results.
func report(rs []result, tunnels, reloads int, upgrade bool, download int64) string {
	var b strings.Builder
	b.WriteString("# WebSocket tunnels across reloads\n\n")
	then := ""
	if upgrade {
		then = ", then a binary upgrade in place where the server has one (Sluice: SIGUSR2 to the master; nginx ignores SIGUSR2 under `daemon off`, which this tool runs it with)"
	}
	fmt.Fprintf(&b, "Produced by `make build && go -C bench run ./cmd/reloaddrops --sluice ../bin/sluice --tunnels %d --reloads %d --out ../docs/benchmarks/reload` "+
		"(%d tunnels through each server's reverse proxy to one WebSocket echo upstream, then %d reloads a second apart%s, "+
		"each with a changed config that new connections must show; the tunnels are checked after the last change and "+
		"past every grace period: Sluice's `--shutdown-grace 2s`, then 4 s). "+
		"Across the same changes, a Server-Sent Events stream through the proxy (an event each %v for %v) and a download of %d bytes "+
		"from the server's static files, read at a pace that spans the changes, must arrive whole, every byte checked. "+
		"Memory is the resident memory of all the server's processes, from `/proc/PID/statm`: at start, with the tunnels open, and at the end.\n\n",
		tunnels, reloads, tunnels, reloads, then, eventGap, streamFor, download)
	b.WriteString("| server | version | tunnels opened | binary upgrade | still echoing at the end | event stream | download | processes before → after | memory (MB) start → tunnels → end |\n|---|---|--:|---|--:|---|---|--:|--:|\n")
	mb := func(n uint64) string { return fmt.Sprintf("%.1f", float64(n)/1e6) }
	for _, r := range rs {
		if r.skipped != "" && r.opened == 0 {
			fmt.Fprintf(&b, "| %s | %s | – | – | not measured: %s | | | | |\n", r.name, r.version, r.skipped)
			continue
		}
		note := ""
		if r.skipped != "" {
			note = " (" + r.skipped + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | **%d**%s | %s | %s | %d → %d | %s → %s → %s |\n", r.name, r.version, r.opened, r.upgraded, r.alive, note,
			r.events, r.download, r.procs[0], r.procs[1], mb(r.rss[0]), mb(r.rss[1]), mb(r.rss[2]))
	}
	return b.String()
}
