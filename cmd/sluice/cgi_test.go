package main_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cgiConfig serves a CGI script that records its pid and its child's in
// dir/pids.$QUERY_STRING and runs until killed.
func cgiConfig(t *testing.T, dir, note string) string {
	t.Helper()
	cgiScript(t, dir, "sleep 1000 &\n"+
		"echo $$ $! > "+dir+"/pids.$QUERY_STRING.tmp && mv "+dir+"/pids.$QUERY_STRING.tmp "+dir+"/pids.$QUERY_STRING\n"+
		"wait\n")
	return "# " + note + "\nlisten: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{cgi: {script: run.cgi, timeout: 1h}}]}]\n"
}

// cgiScript writes the shell script body to dir/run.cgi, executable.
func cgiScript(t *testing.T, dir, body string) {
	t.Helper()
	script := filepath.Join(dir, "run.cgi")
	writeConfig(t, script, "#!/bin/sh\n"+body)
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
}

// startCGIWorker starts a master with one worker serving dir/run.cgi
// (see cgiScript) with the cgi options opts, and waits until it is ready.
func startCGIWorker(t *testing.T, dir, opts string) *server {
	t.Helper()
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nworkers: 1\nhealth: {interval: 100ms, timeout: 1s}\n"+
		"routes: [{match: /, pipeline: [{cgi: {script: run.cgi"+opts+"}}]}]\n")
	s := start(t, "serve", "-c", file)
	s.waitLog(t, "workers ready", 1)
	return s
}

// cgiRequest starts a request for the script and returns its pids once it
// runs, and a channel with its status (0 if the connection broke).
func cgiRequest(t *testing.T, addr, dir, n string) ([2]int, <-chan int) {
	t.Helper()
	status := make(chan int, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Get("http://" + addr + "/?" + n)
		if err != nil {
			status <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		status <- resp.StatusCode
	}()
	var pids [2]int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		b, err := os.ReadFile(filepath.Join(dir, "pids."+n))
		if f := strings.Fields(string(b)); err == nil && len(f) == 2 {
			pids[0], _ = strconv.Atoi(f[0])
			pids[1], _ = strconv.Atoi(f[1])
			return pids, status
		}
	}
	t.Fatal("the CGI script did not start")
	return pids, status
}

// cgiLeft says which of a script's processes still run, or exist with
// parent PID 1 (a zombie reparented there counts as gone: it is dead).
func cgiLeft(pids [2]int) string {
	var left []string
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		left = append(left, strconv.Itoa(pid))
	}
	return strings.Join(left, " ")
}

// A CGI script still running on a config that a reload retired is killed
// once the grace period (--shutdown-grace, 1 s here) has passed, and one
// still running at shutdown is killed before sluice exits: none is left
// behind with parent PID 1.
func TestCGIScriptsEndWithTheirConfig(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a CGI program's process group is killed on Linux only")
	}
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, cgiConfig(t, dir, "gen 0"))
	s := start(t, "serve", "-c", file, "--shutdown-grace", "1s")

	old, oldStatus := cgiRequest(t, s.addr, dir, "0")
	writeConfig(t, file, cgiConfig(t, dir, "gen 1"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	for deadline := time.Now().Add(30 * time.Second); cgiLeft(old) != "" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if left := cgiLeft(old); left != "" {
		t.Errorf("processes %s of the old config's script still run after the grace period", left)
	}
	if code := <-oldStatus; code != 503 {
		t.Errorf("the old config's request: %d, want 503", code)
	}

	cur, _ := cgiRequest(t, s.addr, dir, "1")
	s.stop(t, syscall.SIGTERM)
	// A SIGKILL sent as sluice exits may take a moment to end the
	// script's processes on a loaded machine: look until they are gone.
	for deadline := time.Now().Add(30 * time.Second); cgiLeft(cur) != "" && time.Now().Before(deadline); {
		time.Sleep(50 * time.Millisecond)
	}
	if left := cgiLeft(cur); left != "" {
		t.Errorf("processes %s of a script still run after sluice exited\n%s", left, s.stderr())
	}
}

// existing returns those of pids that still exist, if only as zombies:
// a process is gone once something reaped it.
func existing(pids ...int) []int {
	var left []int
	for _, pid := range pids {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
			left = append(left, pid)
		}
	}
	return left
}

// waitGone waits up to 20 s for pids to be gone (see existing); those
// still there then are killed, and the test fails.
func waitGone(t *testing.T, s *server, what string, pids ...int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); len(existing(pids...)) > 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			left := existing(pids...)
			for _, pid := range left {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Fatalf("%s: processes %v still exist\n%s", what, left, s.stderr())
		}
	}
}

// A worker killed outright (SIGKILL: as its master kills one that stops
// answering) cannot kill its CGI programs' groups; the kernel kills each
// program, and the master, whose descendants' orphans come to it, kills
// and reaps what the program started: nothing of the request is left.
func TestCGIProgramsDieWithTheirWorker(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	cgiConfig(t, dir, "") // for its script
	s := startCGIWorker(t, dir, ", timeout: 1h")
	pids, status := cgiRequest(t, s.addr, dir, "0")
	syscall.Kill(s.workerPids()[1], syscall.SIGKILL)
	if code := <-status; code != 0 {
		t.Errorf("the request whose worker was killed: %d, want a broken connection", code)
	}
	waitGone(t, s, "the worker was killed", pids[0], pids[1])
	s.waitLog(t, "killed a process a worker left behind", 1)
	s.waitLog(t, `msg="worker started"`, 2)
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}

// A process that leaves its request's process group on purpose (setsid)
// escapes the group's kill as its request ends; with workers, the master
// kills it within a sweep (a second) once its parent is gone.
func TestEscapedProcessIsKilledByTheMaster(t *testing.T) {
	needWorkers(t)
	dir := t.TempDir()
	// The escaped process writes its pid itself, once setsid has taken
	// it out of the request's process group, and the script answers only
	// then (once it is sleep): answered earlier, the request's end could
	// kill the group (as it should) before setsid ran, and nothing would
	// escape.
	cgiScript(t, dir, "setsid sh -c 'echo $$ > "+dir+"/pid.tmp && mv "+dir+"/pid.tmp "+dir+"/pid && exec sleep 1000' </dev/null >/dev/null 2>&1 &\n"+
		"until [ -e "+dir+"/pid ] && [ \"$(cat /proc/$(cat "+dir+"/pid)/comm)\" = sleep ]; do sleep 0.01; done 2>/dev/null\n"+
		"printf 'Content-Type: text/plain\\r\\n\\r\\nstarted\\n'\n")
	s := startCGIWorker(t, dir, "")
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "started\n" {
		t.Fatalf("GET: %d %q", code, body)
	}
	b, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	waitGone(t, s, "the request ended", pid)
	s.waitLog(t, "killed a process a worker left behind", 1)
	if !strings.Contains(s.stderr(), "command=sleep") {
		t.Errorf("the warning does not name the command:\n%s", s.stderr())
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d:\n%s", code, s.stderr())
	}
}
