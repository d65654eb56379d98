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
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// configDir holds the config package's golden configs.
const configDir = "../../config"

// goldenEnv is the environment the golden configs are checked with (as in
// the config package's tests).
var goldenEnv = []string{"DOMAIN=example.com", "SITE=Sluice"}

// runIn runs the binary to completion in dir with extra environment
// variables.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("sluice %q: %v", args, err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

// waitLog waits until the server's log holds n occurrences of substr.
func (s *server) waitLog(t *testing.T, substr string, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if strings.Count(s.stderr(), substr) >= n {
			return
		}
	}
	t.Fatalf("log does not show %q %d times:\n%s", substr, n, s.stderr())
}

func writeConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func goldenFiles(t *testing.T, pattern string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(configDir, pattern))
	if err != nil || len(files) == 0 {
		t.Fatalf("no %s in %s: %v", pattern, configDir, err)
	}
	return files
}

// sluice check --explain prints exactly the golden descriptions.
func TestCheckExplainGolden(t *testing.T) {
	files := append(goldenFiles(t, "testdata/*.yaml"), goldenFiles(t, "testdata/*.json")...)
	for _, file := range files {
		rel, _ := filepath.Rel(configDir, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(file, filepath.Ext(file)) + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			r := runIn(t, configDir, goldenEnv, "check", "--explain", "-c", rel)
			if r.code != 0 || r.stdout != string(want) {
				t.Errorf("sluice check --explain -c %s = %d\n%s\nstderr: %s\nwant:\n%s", rel, r.code, r.stdout, r.stderr, want)
			}
			if r := runIn(t, configDir, goldenEnv, "check", "-c", rel); r.code != 0 || r.stdout != "ok\n" {
				t.Errorf("sluice check -c %s = %d %q %q", rel, r.code, r.stdout, r.stderr)
			}
		})
	}
}

// sluice check on a bad config prints every error line and exits 1.
func TestCheckErrorsGolden(t *testing.T) {
	abs, err := filepath.Abs(configDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range goldenFiles(t, "testdata/bad/*.yaml") {
		rel, _ := filepath.Rel(configDir, file)
		t.Run(filepath.Base(file), func(t *testing.T) {
			want, err := os.ReadFile(strings.TrimSuffix(file, ".yaml") + ".golden")
			if err != nil {
				t.Fatal(err)
			}
			r := runIn(t, configDir, goldenEnv, "check", "-c", rel)
			got := strings.ReplaceAll(r.stderr, abs+string(filepath.Separator), "")
			if r.code != 1 || got != string(want) || r.stdout != "" {
				t.Errorf("sluice check -c %s = %d, stdout %q\nstderr:\n%s\nwant:\n%s", rel, r.code, r.stdout, got, want)
			}
		})
	}
}

func TestGraph(t *testing.T) {
	rel := filepath.Join("testdata", "fig3_private.yaml")
	want, err := os.ReadFile(filepath.Join(configDir, "testdata", "fig3_private.dot"))
	if err != nil {
		t.Fatal(err)
	}
	if r := runIn(t, configDir, nil, "graph", "-c", rel); r.code != 0 || r.stdout != string(want) {
		t.Errorf("sluice graph = %d\n%s\nstderr %s", r.code, r.stdout, r.stderr)
	}
	svg := filepath.Join(t.TempDir(), "net.svg")
	t.Run("svg", func(t *testing.T) {
		sluicetest.NeedTool(t, "dot", "graphviz")
		r := runIn(t, configDir, nil, "graph", "-c", rel, "--svg", svg)
		b, _ := os.ReadFile(svg)
		if r.code != 0 || !bytes.Contains(b, []byte("<svg")) || !bytes.Contains(b, []byte("basic_auth")) {
			t.Errorf("sluice graph --svg = %d %q; file %.200q", r.code, r.stderr, b)
		}
	})
	// Without Graphviz: a clear error.
	r := runIn(t, configDir, []string{"PATH=/nonexistent"}, "graph", "-c", rel, "--svg", svg+"2")
	if r.code != 1 || !strings.Contains(r.stderr, "Graphviz") {
		t.Errorf("sluice graph --svg without dot = %d %q", r.code, r.stderr)
	}
	if r := runIn(t, configDir, nil, "graph", "-c", "testdata/bad/unknown_keys.yaml"); r.code != 1 || !strings.Contains(r.stderr, "unknown_keys.yaml:1:1:") {
		t.Errorf("sluice graph of a bad config = %d %q", r.code, r.stderr)
	}
}

func TestFmt(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	messy := "# site\nroutes:\n    - match: /   # root\n      pipeline:\n      - text:   hi\n"
	want := "# site\nroutes:\n  - match: / # root\n    pipeline:\n      - text: hi\n"
	writeConfig(t, file, messy)
	if r := sluice(t, "fmt", "-c", file); r.code != 0 || r.stdout != want {
		t.Errorf("sluice fmt = %d %q, want %q (stderr %q)", r.code, r.stdout, want, r.stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != messy {
		t.Errorf("sluice fmt without -w changed the file")
	}
	if r := sluice(t, "fmt", "-w", "-c", file); r.code != 0 || r.stdout != "" {
		t.Errorf("sluice fmt -w = %d %q %q", r.code, r.stdout, r.stderr)
	}
	if b, _ := os.ReadFile(file); string(b) != want {
		t.Errorf("after fmt -w: %q, want %q", b, want)
	}
	writeConfig(t, file, "routes:\n\t- x\n")
	if r := sluice(t, "fmt", "-c", file); r.code != 1 || !strings.HasPrefix(r.stderr, file+":2:1: YAML syntax") {
		t.Errorf("sluice fmt of a syntax error = %d %q", r.code, r.stderr)
	}
	if r := sluice(t, "fmt"); r.code != 2 || !strings.Contains(r.stderr, "Usage: sluice fmt") {
		t.Errorf("sluice fmt without -c = %d %q", r.code, r.stderr)
	}
}

// The flags' config printed by --print-config loads, and serving it is
// serving the flags.
func TestPrintConfig(t *testing.T) {
	site := t.TempDir()
	page := strings.Repeat("<p>compressible text</p>\n", 100)
	writeConfig(t, filepath.Join(site, "index.html"), page)
	r := sluice(t, "serve", "--root", site, "--listen", "127.0.0.1:0", "--compress", "--server-header=", "--print-config")
	if r.code != 0 {
		t.Fatalf("--print-config = %d %q", r.code, r.stderr)
	}
	for _, want := range []string{"listen: 127.0.0.1:0", "server_header: false", "files: " + site, "- compress"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, r.stdout)
		}
	}
	file := filepath.Join(t.TempDir(), "printed.yaml")
	writeConfig(t, file, r.stdout)
	if c := sluice(t, "check", "-c", file); c.code != 0 {
		t.Fatalf("check of the printed config = %d %q\n%s", c.code, c.stderr, r.stdout)
	}
	s := start(t, "serve", "-c", file)
	req, _ := http.NewRequest("GET", "http://"+s.addr+"/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := (&http.Transport{DisableCompression: true}).RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Encoding") != "gzip" || resp.Header.Values("Server") != nil {
		t.Errorf("GET / = %d, Content-Encoding %q, Server %q", resp.StatusCode, resp.Header.Get("Content-Encoding"), resp.Header.Values("Server"))
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}

func TestServeConfigErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "bad.yaml")
	writeConfig(t, file, "lisen: :80\nroutes: [{match: /, pipeline: [txt]}]\n")
	r := sluice(t, "serve", "-c", file)
	want := file + ":1:1: unknown top-level key \"lisen\" (did you mean \"listen\"?)\n" +
		file + ":2:32: unknown component \"txt\" (did you mean \"text\"?)\n"
	if r.code != 1 || !strings.HasPrefix(r.stderr, want) || !strings.Contains(r.stderr, "level=ERROR") {
		t.Errorf("serve -c bad = %d\n%s\nwant prefix\n%s", r.code, r.stderr, want)
	}
	if r := sluice(t, "serve", "-c", file, "--root", dir); r.code != 2 || !strings.Contains(r.stderr, "--root") || !strings.Contains(r.stderr, "Usage: sluice serve") {
		t.Errorf("serve -c with --root = %d %q", r.code, r.stderr)
	}
	if r := sluice(t, "check"); r.code != 2 || !strings.Contains(r.stderr, "Usage: sluice check") {
		t.Errorf("check without -c = %d %q", r.code, r.stderr)
	}
	if r := sluice(t, "check", "-c", filepath.Join(dir, "missing.yaml")); r.code != 1 || !strings.Contains(r.stderr, "no such file") {
		t.Errorf("check of a missing file = %d %q", r.code, r.stderr)
	}
}

// --workers takes 0 (one process), a number up to config.MaxWorkers, or
// auto; nothing else.
func TestWorkersFlag(t *testing.T) {
	for _, bad := range []string{"-1", "none", "02", "1025"} {
		if r := sluice(t, "serve", "--workers", bad, "--print-config"); r.code != 1 || !strings.Contains(r.stderr, "--workers") {
			t.Errorf("--workers %s = %d %q", bad, r.code, r.stderr)
		}
	}
	if r := sluice(t, "serve", "--workers", "auto", "--print-config"); r.code != 0 || !strings.Contains(r.stdout, "workers: auto") {
		t.Errorf("--workers auto = %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// reloadConfig is a config whose one route answers body.
func reloadConfig(listen, body string) string {
	return fmt.Sprintf("listen: %s\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", listen, body)
}

// Ten reloads under load, one of them invalid: no request fails, each
// valid reload switches the content, the invalid one changes nothing.
func TestReloadUnderLoad(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, reloadConfig("127.0.0.1:0", "gen 0"))
	s := start(t, "serve", "-c", file)
	url := "http://" + s.addr + "/"

	var ok, failed atomic.Int64
	var firstErr atomic.Value
	ctx, stop := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
			defer client.CloseIdleConnections()
			for ctx.Err() == nil {
				resp, err := client.Get(url)
				if err == nil {
					var b []byte
					b, err = io.ReadAll(resp.Body)
					resp.Body.Close()
					if err == nil && (resp.StatusCode != 200 || !strings.HasPrefix(string(b), "gen ")) {
						err = fmt.Errorf("status %d body %q", resp.StatusCode, b)
					}
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ok.Add(1)
			}
		}()
	}
	body := func() string {
		_, _, b := get(t, url)
		return b
	}
	current := "gen 0"
	reloads, rejected := 0, 0
	for i := 1; i <= 10; i++ {
		before := ok.Load()
		if i == 5 {
			writeConfig(t, file, "routes:\n  - match: /\n    pipeline: [txt: broken]\n")
			s.cmd.Process.Signal(syscall.SIGHUP)
			rejected++
			s.waitLog(t, "reload rejected", rejected)
		} else {
			current = fmt.Sprintf("gen %d", i)
			writeConfig(t, file, reloadConfig("127.0.0.1:0", current))
			s.cmd.Process.Signal(syscall.SIGHUP)
			reloads++
			s.waitLog(t, "msg=reloaded", reloads)
		}
		if got := body(); got != current {
			t.Errorf("after reload %d: %q, want %q", i, got, current)
		}
		// Let the clients make some requests on this config.
		for deadline := time.Now().Add(10 * time.Second); ok.Load() < before+20 && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	stop()
	wg.Wait()
	if n := failed.Load(); n != 0 {
		t.Errorf("%d of %d requests failed across the reloads; first: %v", n, n+ok.Load(), firstErr.Load())
	}
	if !strings.Contains(s.stderr(), `unknown component \"txt\"`) && !strings.Contains(s.stderr(), `unknown component "txt"`) {
		t.Errorf("the invalid config's error is not logged:\n%s", s.stderr())
	}
	t.Logf("%d requests across %d reloads", ok.Load(), reloads+rejected)
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}

// sluice reload checks the file, then signals the server named by the
// file's pid_file; an invalid file is not sent.
func TestReloadCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	pidFile := filepath.Join(dir, "sluice.pid")
	withPid := func(body string) string {
		return "pid_file: sluice.pid\n" + reloadConfig("127.0.0.1:0", body)
	}
	writeConfig(t, file, withPid("one"))
	s := start(t, "serve", "-c", file)
	b, err := os.ReadFile(pidFile)
	if err != nil || strings.TrimSpace(string(b)) != strconv.Itoa(s.cmd.Process.Pid) {
		t.Fatalf("pid file: %q %v, want %d", b, err, s.cmd.Process.Pid)
	}
	writeConfig(t, file, withPid("two"))
	if r := sluice(t, "reload", "-c", file); r.code != 0 || !strings.Contains(r.stdout, "sent SIGHUP") {
		t.Fatalf("sluice reload = %d %q %q", r.code, r.stdout, r.stderr)
	}
	s.waitLog(t, "msg=reloaded", 1)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "two" {
		t.Errorf("after reload: %q, want two", body)
	}
	// An invalid file: reload refuses to signal.
	writeConfig(t, file, "pid_file: sluice.pid\nroutes: [{match: /, pipeline: [txt]}]\n")
	if r := sluice(t, "reload", "-c", file); r.code != 1 || !strings.Contains(r.stderr, file+":2:") {
		t.Errorf("sluice reload of an invalid file = %d %q", r.code, r.stderr)
	}
	// --pid-file and --pid name the process directly; the server then
	// rejects the invalid file itself.
	if r := sluice(t, "reload", "--pid-file", pidFile); r.code != 0 {
		t.Errorf("sluice reload --pid-file = %d %q", r.code, r.stderr)
	}
	s.waitLog(t, "reload rejected", 1)
	writeConfig(t, file, withPid("three"))
	if r := sluice(t, "reload", "--pid", strconv.Itoa(s.cmd.Process.Pid)); r.code != 0 {
		t.Errorf("sluice reload --pid = %d %q", r.code, r.stderr)
	}
	s.waitLog(t, "msg=reloaded", 2)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "three" {
		t.Errorf("after reload --pid: %q, want three", body)
	}
	if r := sluice(t, "reload"); r.code != 2 {
		t.Errorf("sluice reload without a target = %d %q", r.code, r.stderr)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
	if _, err := os.Stat(pidFile); !os.IsNotExist(err) {
		t.Errorf("pid file left after exit: %v", err)
	}
}

// A reload opens new listen addresses and closes those no longer listed;
// connections accepted before stay open.
func TestReloadListen(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	sock := filepath.Join(dir, "s.sock")
	writeConfig(t, file, reloadConfig("127.0.0.1:0", "tcp"))
	s := start(t, "serve", "-c", file)
	unixClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", sock)
		},
	}}
	// A keep-alive connection to the TCP address, opened before it is dropped.
	tcpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	if resp, err := tcpClient.Get("http://" + s.addr + "/"); err != nil {
		t.Fatal(err)
	} else {
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}

	writeConfig(t, file, reloadConfig("[127.0.0.1:0, unix:s.sock]", "both"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	resp, err := unixClient.Get("http://sluice/")
	if err != nil {
		t.Fatalf("GET over the new unix socket: %v\n%s", err, s.stderr())
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != "both" {
		t.Errorf("unix socket: %q", b)
	}

	writeConfig(t, file, reloadConfig("unix:s.sock", "unix only"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 2)
	if c, err := net.DialTimeout("tcp", s.addr, 5*time.Second); err == nil {
		c.Close()
		t.Errorf("the removed TCP address still accepts connections")
	}
	resp, err = tcpClient.Get("http://" + s.addr + "/")
	if err != nil {
		t.Errorf("the keep-alive connection of the removed address was dropped: %v", err)
	} else {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(b) != "unix only" {
			t.Errorf("old connection after reload: %q", b)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
	if _, err := os.Stat(sock); !os.IsNotExist(err) {
		t.Errorf("unix socket left after exit: %v", err)
	}
}

func TestServeBrowse(t *testing.T) {
	site := t.TempDir()
	os.Mkdir(filepath.Join(site, "docs"), 0o755)
	writeConfig(t, filepath.Join(site, "docs", "notes.txt"), "notes\n")
	s := start(t, "serve", "--root", site, "--listen", "127.0.0.1:0", "--browse")
	if code, _, body := get(t, "http://"+s.addr+"/docs/"); code != 200 || !strings.Contains(body, "notes.txt") {
		t.Errorf("GET /docs/ with --browse = %d %.200q", code, body)
	}
	s2 := start(t, "serve", "--root", site, "--listen", "127.0.0.1:0")
	if code, _, _ := get(t, "http://"+s2.addr+"/docs/"); code != 404 {
		t.Errorf("GET /docs/ without --browse = %d, want 404", code)
	}
}

// A reload may move a port from one address to an overlapping one (here
// 127.0.0.1:P to 0.0.0.0:P), which cannot be opened while the old socket
// listens: the old listener is closed first.
func TestReloadListenSamePort(t *testing.T) {
	file := filepath.Join(t.TempDir(), "site.yaml")
	writeConfig(t, file, reloadConfig("127.0.0.1:0", "one"))
	s := start(t, "serve", "-c", file)
	_, port, _ := net.SplitHostPort(s.addr)
	writeConfig(t, file, reloadConfig("0.0.0.0:"+port, "wildcard"))
	s.cmd.Process.Signal(syscall.SIGHUP)
	s.waitLog(t, "msg=reloaded", 1)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "wildcard" {
		t.Errorf("after reload: %q, want the new config's answer\n%s", body, s.stderr())
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}

// A request the engine refuses reaches the access log of the catch-all
// route, its request line escaped (issue 14, finding 8).
func TestServeLogsRefusedRequests(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	access := filepath.Join(dir, "access.log")
	writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline:\n      - log: %q\n      - text: hi\n", access))
	s := start(t, "serve", "-c", file)
	if out := sluicetest.Exchange(t, s.addr, "GET /\x1b]0;owned\x07\n HTTP/1.1\r\n\r\n"); !strings.HasPrefix(out, "HTTP/1.1 400 ") {
		t.Fatalf("response %q, want 400", out)
	}
	want := `] "GET /\x1b]0;owned\x07" 400 `
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		data, _ := os.ReadFile(access)
		if strings.Contains(string(data), want) {
			if strings.Count(string(data), "\n") != 1 || !strings.HasSuffix(string(data), ` "-" "-"`+"\n") {
				t.Errorf("access log %q, want one line ending \"-\" \"-\"", data)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("access log %q lacks %q", data, want)
		}
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
}

// sluice check warns about what serve warns about, with the same text
// (as FILE:LINE:COL: warning: message), and exits 0 when there are only
// warnings.
func TestCheckWarnsLikeServe(t *testing.T) {
	dir := t.TempDir()
	writeConfig(t, filepath.Join(dir, "users.htpasswd"), "alice:plaintext\n")
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, `health: {timeout: 2s}
routes:
  - match: /
    pipeline:
      - basic_auth: {realm: r, htpasswd: ./users.htpasswd}
      - text: hi
`)
	r := sluice(t, "check", "-c", file)
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if r.code != 0 || r.stdout != "ok\n" || len(lines) != 2 ||
		!strings.HasPrefix(lines[0], file+":1:9: warning: health: ") ||
		!strings.HasPrefix(lines[1], file+":5:9: warning: basic_auth: ") {
		t.Fatalf("sluice check = %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
	}

	s := start(t, "serve", "-c", file, "--listen", "127.0.0.1:0")
	s.stop(t, syscall.SIGTERM)
	var warned []string
	for _, l := range strings.Split(s.stderr(), "\n") {
		if _, rest, ok := strings.Cut(l, " level=WARN msg="); ok {
			msg, err := strconv.QuotedPrefix(rest)
			if err != nil {
				t.Fatalf("serve's log line %q: %v", l, err)
			}
			msg, _ = strconv.Unquote(msg)
			warned = append(warned, msg)
		}
	}
	if len(warned) != len(lines) {
		t.Fatalf("serve warned %d times, check %d:\n%s", len(warned), len(lines), s.stderr())
	}
	for _, msg := range warned {
		found := false
		for _, l := range lines {
			_, text, _ := strings.Cut(l, ": warning: ")
			found = found || strings.HasPrefix(text, msg)
		}
		if !found {
			t.Errorf("serve warns %q; check does not:\n%s", msg, r.stderr)
		}
	}
}

// sluice reload -c FILE against a server started without FILE's
// pid_file (here with --pid-file elsewhere) finds no process there: it
// says so and how to name the server, --pid-file or --pid; given the
// server's pid file it reloads it.
func TestReloadSuggestsPidFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "site.yaml")
	other := filepath.Join(dir, "other.pid")
	writeConfig(t, file, "pid_file: sluice.pid\n"+reloadConfig("127.0.0.1:0", "one"))
	s := start(t, "serve", "-c", file, "--pid-file", other)
	r := sluice(t, "reload", "-c", file)
	if r.code != 1 || !strings.Contains(r.stderr, filepath.Join(dir, "sluice.pid")) || !strings.Contains(r.stderr, "give --pid-file FILE or --pid N") {
		t.Errorf("sluice reload -c with no process at the pid_file = %d, stderr:\n%s", r.code, r.stderr)
	}
	writeConfig(t, file, reloadConfig("127.0.0.1:0", "two"))
	r = sluice(t, "reload", "-c", file)
	if r.code != 1 || !strings.Contains(r.stderr, "sets no pid_file; give --pid-file FILE or --pid N") {
		t.Errorf("sluice reload -c without a pid_file = %d, stderr:\n%s", r.code, r.stderr)
	}
	if r := sluice(t, "reload", "-c", file, "--pid-file", other); r.code != 0 {
		t.Fatalf("sluice reload --pid-file = %d, stderr:\n%s", r.code, r.stderr)
	}
	s.waitLog(t, "msg=reloaded", 1)
	if _, _, body := get(t, "http://"+s.addr+"/"); body != "two" {
		t.Errorf("after reload: %q, want two", body)
	}
	if code := s.stop(t, syscall.SIGTERM); code != 0 {
		t.Errorf("exit status %d\n%s", code, s.stderr())
	}
	// A pid file left behind names a process that has ended.
	writeConfig(t, other, strconv.Itoa(s.cmd.Process.Pid)+"\n")
	r = sluice(t, "reload", "--pid-file", other)
	if r.code != 1 || !strings.Contains(r.stderr, "is not running: the server is not running, or the pid file is stale") {
		t.Errorf("sluice reload with a stale pid file = %d, stderr:\n%s", r.code, r.stderr)
	}
}
