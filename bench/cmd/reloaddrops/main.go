// Command reloaddrops measures what a configuration reload does to
// long-lived connections: it opens WebSocket tunnels through a server's
// reverse proxy to an echo upstream of its own, reloads the server
// several times, waits past every grace period, and counts the tunnels
// that still echo. It runs Sluice with workers and in one process,
// nginx (nginx -s reload) and Caddy (caddy reload), each on loopback
// ports of its own, and writes a Markdown table.
//
//	go -C bench run ./cmd/reloaddrops --sluice ../bin/sluice --out ../docs/benchmarks/reload
//
// A server whose program is missing is left out, with the reason.
package main

import (
	"context"
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
	out := flag.String("out", "", "a `directory` to write README.md into (default: stdout only)")
	flag.Parse()
	if err := run(*sluice, *tunnels, *reloads, *out); err != nil {
		fmt.Fprintln(os.Stderr, "reloaddrops:", err)
		os.Exit(1)
	}
}

// result is one server's outcome.
type result struct {
	name, version string
	opened, alive int
	procs         [2]int // processes of the server before the reloads and after
	newOK         bool
	skipped       string
}

func run(sluice string, tunnels, reloads int, out string) error {
	sluice, err := filepath.Abs(sluice)
	if err != nil {
		return err
	}
	up := httptest.NewServer(http.HandlerFunc(echo))
	defer up.Close()
	var results []result
	for _, s := range servers(sluice, up.URL) {
		r := measure(s, tunnels, reloads)
		fmt.Fprintf(os.Stderr, "%s: %d of %d tunnels echo after %d reloads (%s)\n", r.name, r.alive, r.opened, reloads, r.skipped)
		results = append(results, r)
	}
	table := report(results, tunnels, reloads)
	fmt.Print(table)
	if out == "" {
		return nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(out, "README.md"), []byte(table), 0o644)
}

// echo is the upstream: a WebSocket that echoes every message.
func echo(w http.ResponseWriter, r *http.Request) {
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
	// settle is how long after the last reload the tunnels are checked:
	// past every grace period of the server.
	settle time.Duration
}

func servers(sluice, upstream string) []server {
	sluiceConf := func(workers int) func(dir, addr string, gen int) string {
		return func(dir, addr string, gen int) string {
			w := ""
			if workers > 0 {
				w = fmt.Sprintf("workers: %d\n", workers)
			}
			return fmt.Sprintf("listen: %s\n%sroutes:\n  - match: /ws\n    pipeline:\n      - proxy: %s\n  - match: /\n    pipeline:\n      - text: \"generation %d\"\n", addr, w, upstream, gen)
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
				file := filepath.Join(dir, "sluice.yaml")
				b, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				next := strings.Replace(string(b), fmt.Sprintf("generation %d", gen-1), fmt.Sprintf("generation %d", gen), 1)
				if err := os.WriteFile(file, []byte(next), 0o644); err != nil {
					return err
				}
				return cmd.Process.Signal(syscall.SIGHUP)
			},
			settle: 4 * time.Second, // past the 2 s grace
		}
	}
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
        location / { return 200 "generation %[4]d"; }
    }
}
`, dir, addr, u, gen)
	}
	caddyConf := func(dir, addr string, gen int) string {
		return fmt.Sprintf(`{
	admin localhost:%[4]d
	auto_https off
}
http://%[1]s {
	reverse_proxy /ws %[2]s
	respond / "generation %[3]d"
}
`, addr, upstream, gen, adminPort(addr))
	}
	return []server{
		sluiceServer("sluice (workers: 2)", 2),
		sluiceServer("sluice (one process)", 0),
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
				b, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				if err := os.WriteFile(file, []byte(strings.Replace(string(b), fmt.Sprintf("generation %d", gen-1), fmt.Sprintf("generation %d", gen), 1)), 0o644); err != nil {
					return err
				}
				return exec.Command("nginx", "-p", dir, "-c", file, "-s", "reload").Run()
			},
			settle: 4 * time.Second,
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
				b, err := os.ReadFile(file)
				if err != nil {
					return err
				}
				if err := os.WriteFile(file, []byte(strings.Replace(string(b), fmt.Sprintf("generation %d", gen-1), fmt.Sprintf("generation %d", gen), 1)), 0o644); err != nil {
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
			settle: 4 * time.Second,
		},
	}
}

// adminPort is a port for Caddy's admin endpoint beside addr's.
func adminPort(addr string) int {
	_, p, _ := net.SplitHostPort(addr)
	var n int
	fmt.Sscan(p, &n)
	return n + 1
}

// measure starts s, opens the tunnels, reloads it and counts those that
// still echo.
func measure(s server, tunnels, reloads int) (r result) {
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
	addr, err := freeAddr()
	if err != nil {
		r.skipped = err.Error()
		return r
	}
	cmd, err := s.start(dir, addr, 1)
	if err != nil {
		r.skipped = err.Error()
		return r
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		r.skipped = err.Error()
		return r
	}
	defer func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	}()
	if err := waitBody(addr, "generation 1", 20*time.Second); err != nil {
		r.skipped = "did not start: " + err.Error()
		return r
	}
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
	r.procs[0] = groupSize(cmd.Process.Pid)
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
	r.newOK = true
	time.Sleep(s.settle)
	for i, ws := range conns {
		if echoes(ws, fmt.Sprintf("after %d", i)) {
			r.alive++
		}
	}
	r.procs[1] = groupSize(cmd.Process.Pid)
	return r
}

// groupSize counts the processes of process group pgid (the server's
// master, workers and any old workers still draining).
func groupSize(pgid int) int {
	ents, _ := os.ReadDir("/proc")
	n := 0
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
			n++
		}
	}
	return n
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
func report(rs []result, tunnels, reloads int) string {
	var b strings.Builder
	b.WriteString("# WebSocket tunnels across reloads\n\n")
	fmt.Fprintf(&b, "Produced by `make build && go -C bench run ./cmd/reloaddrops --sluice ../bin/sluice --out ../docs/benchmarks/reload` "+
		"(%d tunnels through each server's reverse proxy to one WebSocket echo upstream, then %d reloads a second apart, "+
		"each with a changed config that new connections must show; the tunnels are checked after the last reload and "+
		"past every grace period: Sluice's `--shutdown-grace 2s`, then 4 s).\n\n", tunnels, reloads)
	b.WriteString("| server | version | tunnels opened | still echoing after the reloads | processes before → after |\n|---|---|--:|--:|--:|\n")
	for _, r := range rs {
		if r.skipped != "" && r.opened == 0 {
			fmt.Fprintf(&b, "| %s | %s | – | not measured: %s | |\n", r.name, r.version, r.skipped)
			continue
		}
		note := ""
		if r.skipped != "" {
			note = " (" + r.skipped + ")"
		}
		fmt.Fprintf(&b, "| %s | %s | %d | **%d**%s | %d → %d |\n", r.name, r.version, r.opened, r.alive, note, r.procs[0], r.procs[1])
	}
	return b.String()
}
