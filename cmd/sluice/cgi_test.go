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
	script := filepath.Join(dir, "run.cgi")
	writeConfig(t, script, "#!/bin/sh\n"+
		"sleep 1000 &\n"+
		"echo $$ $! > "+dir+"/pids.$QUERY_STRING.tmp && mv "+dir+"/pids.$QUERY_STRING.tmp "+dir+"/pids.$QUERY_STRING\n"+
		"wait\n")
	if err := os.Chmod(script, 0o755); err != nil {
		t.Fatal(err)
	}
	return "# " + note + "\nlisten: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{cgi: {script: run.cgi, timeout: 1h}}]}]\n"
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
	if left := cgiLeft(cur); left != "" {
		t.Errorf("processes %s of a script still run after sluice exited\n%s", left, s.stderr())
	}
}
