package main

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

func checkRoutes(t *testing.T, base string) {
	t.Helper()
	index, err := os.ReadFile(filepath.Join("public", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	resp, body := sluicetest.Get(t, base+"/hello")
	if resp.StatusCode != 200 || body != "Hello, world!\n" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Errorf("/hello: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	if resp, body := sluicetest.Get(t, base+"/"); resp.StatusCode != 200 || body != string(index) {
		t.Errorf("/: %d %.60q", resp.StatusCode, body)
	}
	if resp, _ := sluicetest.Get(t, base+"/missing"); resp.StatusCode != 404 {
		t.Errorf("/missing: %d", resp.StatusCode)
	}
}

// The routes, served in the test process.
func TestHello(t *testing.T) {
	comp, err := newServer("public")
	if err != nil {
		t.Fatal(err)
	}
	checkRoutes(t, sluicetest.NewServer(t, pipe.Handler(comp)).URL)
}

// The program itself: built, run as a process on a free port, stopped
// with SIGTERM.
func TestHelloProgram(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the program")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to build the program with")
	}
	bin := filepath.Join(t.TempDir(), "fig3-hello")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	// The first line of the log says where it listens.
	lines := bufio.NewScanner(stderr)
	if !lines.Scan() {
		t.Fatalf("no log line: %v", lines.Err())
	}
	line := lines.Text()
	i := strings.Index(line, "http://")
	if i < 0 {
		t.Fatalf("log line %q names no address", line)
	}
	checkRoutes(t, strings.TrimSuffix(line[i:], "/"))

	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { io.Copy(io.Discard, stderr); done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("exit after SIGTERM: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the program did not stop after SIGTERM")
	}
}
