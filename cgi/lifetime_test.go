//go:build unix

package cgi

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// cgiPidScript is a script that records its pid and its child's in
// dir/pids.$QUERY_STRING and then runs until killed, without output.
func cgiPidScript(t *testing.T, dir string) string {
	t.Helper()
	return cgiScript(t, dir, "run.cgi", "#!/bin/sh\n"+
		"sleep 1000 &\n"+
		"echo $$ $! > "+dir+"/pids.$QUERY_STRING.tmp && mv "+dir+"/pids.$QUERY_STRING.tmp "+dir+"/pids.$QUERY_STRING\n"+
		"wait\n")
}

// cgiAllDead waits until every pid's process is gone: reaped (leaders,
// our children) or dead (their children, reparented).
func cgiAllDead(t *testing.T, what string, leaders, children []int) {
	t.Helper()
	cgiPoll(func() bool {
		for _, pid := range leaders {
			if !cgiGone(pid) {
				return false
			}
		}
		for _, pid := range children {
			if !cgiDead(pid) {
				return false
			}
		}
		return true
	})
	for _, pid := range leaders {
		if !cgiGone(pid) {
			t.Errorf("%s: program %d still exists", what, pid)
		}
	}
	for _, pid := range children {
		if !cgiDead(pid) {
			t.Errorf("%s: the program's child %d still runs", what, pid)
		}
	}
}

// Clients that disconnect while their programs run, before any output,
// get them killed with their process groups and reaped at once, not at
// the timeout (1,000 quick disconnects left 1,000 processes).
func TestClientGoneBeforeOutput(t *testing.T) {
	skipUnlessLinux(t, "learning that a client went")
	dir := t.TempDir()
	g, _ := newGateway(t, Options{Script: cgiPidScript(t, dir), Timeout: time.Hour})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr
	const n = 20
	var leaders, children []int
	var wg sync.WaitGroup
	var mu sync.Mutex
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			fmt.Fprintf(conn, "GET /?%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
			pids := cgiReadPids(t, filepath.Join(dir, "pids."+strconv.Itoa(i)), 2)
			conn.Close()
			mu.Lock()
			leaders, children = append(leaders, pids[0]), append(children, pids[1])
			mu.Unlock()
		}()
	}
	wg.Wait()
	cgiAllDead(t, "after the clients left", leaders, children)
}

// A program whose timeout fires while the request body is still arriving
// is killed and reaped at once, and the client gets a 504 without
// sending the rest of the body (it was a zombie until the body ended, and
// then no 504 came).
func TestTimeoutWhileBodyArrives(t *testing.T) {
	skipUnlessLinux(t, "killing a process group")
	dir := t.TempDir()
	g, _ := newGateway(t, Options{Script: cgiPidScript(t, dir), Timeout: time.Second})
	addr := sluicetest.NewServer(t, pipe.Handler(g)).Addr
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	fmt.Fprintf(conn, "POST /?0 HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n%s", strings.Repeat("x", 1000))
	stop := make(chan struct{})
	defer close(stop)
	go func() { // a slow upload that would take a day
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			if _, err := conn.Write([]byte("x")); err != nil {
				return
			}
		}
	}()
	pids := cgiReadPids(t, filepath.Join(dir, "pids.0"), 2)
	resp, body := sluicetest.ReadResponse(t, bufio.NewReader(conn), "POST")
	if resp.StatusCode != 504 || body != "504 Gateway Timeout: CGI program timed out\n" {
		t.Errorf("status %d (%q), want 504", resp.StatusCode, body)
	}
	if !resp.Close {
		t.Error("the connection stays open with the body unread")
	}
	cgiAllDead(t, "after the timeout", pids[:1], pids[1:])
}

// At most MaxRunning programs run at once: the next request gets 503 with
// Retry-After, and no program is started for it.
func TestMaxRunning(t *testing.T) {
	dir := t.TempDir()
	gofile := filepath.Join(dir, "go")
	script := cgiScript(t, dir, "wait.cgi", "#!/bin/sh\n"+
		"echo $$ > "+dir+"/pid.$QUERY_STRING\n"+
		"i=0; while [ ! -e "+gofile+" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done\n"+
		"printf 'Content-Type: text/plain\\n\\nok'\n")
	g, _ := newGateway(t, Options{Script: script, MaxRunning: 2})
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr

	results := make(chan int, 2)
	for i := range 2 {
		go func() {
			resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(fmt.Sprintf("%s/?%d", base, i))
			if err != nil {
				results <- 0
				return
			}
			resp.Body.Close()
			results <- resp.StatusCode
		}()
		cgiReadPids(t, filepath.Join(dir, "pid."+strconv.Itoa(i)), 1)
	}

	resp, body := sluicetest.Get(t, base+"/?2")
	if resp.StatusCode != 503 || resp.Header.Get("Retry-After") == "" {
		t.Errorf("third request: %d, Retry-After %q (%q), want 503 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if _, err := os.Stat(filepath.Join(dir, "pid.2")); err == nil {
		t.Error("the third program ran")
	}

	if err := os.WriteFile(gofile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if code := <-results; code != 200 {
			t.Errorf("a running program's request: %d, want 200", code)
		}
	}
	if resp, body := sluicetest.Get(t, base+"/?3"); resp.StatusCode != 200 {
		t.Errorf("after the others ended: %d (%q), want 200", resp.StatusCode, body)
	}
}

// Close kills the programs still running and returns once they are
// reaped; their requests get 503, and so do later ones.
func TestCloseKillsPrograms(t *testing.T) {
	skipUnlessLinux(t, "killing a process group")
	dir := t.TempDir()
	g, _ := newGateway(t, Options{Script: cgiPidScript(t, dir), Timeout: time.Hour})
	closer, ok := g.(io.Closer)
	if !ok {
		t.Fatal("the CGI component is not an io.Closer")
	}
	base := "http://" + sluicetest.NewServer(t, pipe.Handler(g)).Addr
	status := make(chan string, 1)
	go func() {
		resp, err := (&http.Client{Timeout: 60 * time.Second}).Get(base + "/?0")
		if err != nil {
			status <- err.Error()
			return
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		status <- fmt.Sprintf("%d %s", resp.StatusCode, body)
	}()
	pids := cgiReadPids(t, filepath.Join(dir, "pids.0"), 2)
	closer.Close()
	if !cgiGone(pids[0]) {
		t.Errorf("program %d not reaped when Close returned", pids[0])
	}
	cgiAllDead(t, "after Close", nil, pids[1:])
	if got, want := <-status, "503 503 Service Unavailable: server shutting down\n"; got != want {
		t.Errorf("the running program's request: %q, want %q", got, want)
	}
	if resp, _ := sluicetest.Get(t, base+"/?1"); resp.StatusCode != 503 {
		t.Errorf("after Close: %d, want 503", resp.StatusCode)
	}
	if _, err := os.Stat(filepath.Join(dir, "pids.1")); err == nil {
		t.Error("a program ran after Close")
	}
}
