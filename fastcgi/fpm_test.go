//go:build unix

package fastcgi_test

import (
	"bufio"
	"bytes"
	"crypto/md5"
	"fmt"
	"io"
	"mime/multipart"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/upstream"
)

// scripts are the PHP scripts of the tests' document root.
var scripts = map[string]string{
	"hello.php": `<?php echo "hello";`,
	"params.php": `<?php
foreach (['SCRIPT_FILENAME', 'SCRIPT_NAME', 'PATH_INFO', 'PATH_TRANSLATED', 'DOCUMENT_ROOT',
	'REQUEST_URI', 'QUERY_STRING', 'REQUEST_METHOD', 'SERVER_NAME', 'SERVER_PORT', 'SERVER_PROTOCOL',
	'REMOTE_ADDR', 'HTTPS', 'HTTP_X_CUSTOM', 'HTTP_PROXY', 'HTTP_COOKIE', 'APP_ENV', 'CONTENT_LENGTH',
	'CONTENT_TYPE', 'GATEWAY_INTERFACE', 'REMOTE_USER', 'HTTP_AUTHORIZATION', 'PHP_AUTH_USER'] as $k) {
	echo $k, '=', $_SERVER[$k] ?? '(unset)', "\n";
}
echo 'getenv=', var_export(getenv('HTTP_PROXY'), true), "\n";`,
	"post.php":   `<?php $b = file_get_contents('php://input'); echo strlen($b), ' ', md5($b);`,
	"upload.php": `<?php $f = $_FILES['f']; echo $f['error'], ' ', $f['size'], ' ', md5_file($f['tmp_name']), ' ', $_POST['name'];`,
	"stream.php": `<?php echo "first\n"; flush();
$m = $_GET['wait']; for ($i = 0; $i < 3000 && !file_exists($m); $i++) usleep(10000);
echo "second\n";`,
	"wait.php": `<?php $m = $_GET['wait']; touch($m . '.started'); for ($i = 0; $i < 3000 && !file_exists($m); $i++) usleep(10000); echo "waited";`,
	"part.php": `<?php header('Content-Type: text/plain'); echo "part\n"; flush();
$m = $_GET['wait']; for ($i = 0; $i < 3000 && !file_exists($m); $i++) usleep(10000); echo "rest\n";`,
	"status.php":   `<?php http_response_code(418); echo "teapot";`,
	"location.php": `<?php header('Location: /elsewhere');`,
	"badhead.php":  `<?php header('X-Bad-Head: 1'); header("X\x01Y: 2"); echo "x";`,
	"big.php":      `<?php $s = str_repeat('0123456789abcdef', 4096); for ($i = 0; $i < 160; $i++) echo $s;`,
	"stderr.php":   `<?php error_log("oops \x1b[31mred\nforged line"); echo "ok";`,
	"slow.php":     `<?php usleep(20000); echo "slow";`,
	"ok.php":       `<?php touch(__DIR__ . '/ok-ran'); echo "ok";`,
	"index.php":    `<?php echo "index ", $_SERVER['SCRIPT_NAME'];`,
	"ext.php":      `<?php echo extension_loaded('mysqli') ? 'mysqli' : 'no mysqli', ' ', php_ini_loaded_file() ?: 'no php.ini';`,
}

type site struct {
	root string
	fpm  *fpmtest.FPM
	srv  *sluicetest.Server
	cl   *fastcgi.Client
	log  *sluicetest.Buffer
}

// newSite starts PHP-FPM (fo), the document root with scripts, and a
// Sluice server whose pipeline is the fastcgi component (opts, upstream
// and root filled in).
func newSite(t *testing.T, fo fpmtest.Options, opts fastcgi.Options) *site {
	t.Helper()
	s := &site{fpm: fpmtest.Start(t, fo)}
	root, err := os.MkdirTemp("", "sluice-fcgi-root-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(root) })
	s.root = root
	for name, body := range scripts {
		write(t, filepath.Join(root, name), body)
	}
	opts.Upstreams = []string{s.fpm.Addr()}
	opts.Root = root
	if opts.MaxConns == 0 {
		opts.MaxConns = max(fo.Children, 4)
		if fo.Children == 0 {
			opts.MaxConns = 4
		}
	}
	opts.Logger, s.log = sluicetest.Logger()
	s.cl, err = fastcgi.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.cl.Close() })
	s.srv = sluicetest.NewServer(t, pipe.Handler(pipe.Chain{s.cl}))
	return s
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestGet(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	for range 3 { // the second and third on a kept-alive connection
		resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php")
		if resp.StatusCode != 200 || body != "hello" || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
			t.Fatalf("got %d %q %v", resp.StatusCode, body, resp.Header)
		}
	}
	if resp, body := sluicetest.Get(t, s.srv.URL+"/"); resp.StatusCode != 200 || body != "index /index.php" {
		t.Errorf("/: got %d %q", resp.StatusCode, body)
	}
	if resp, _ := sluicetest.Get(t, s.srv.URL+"/missing.php"); resp.StatusCode != 404 {
		t.Errorf("missing.php: got %d", resp.StatusCode)
	}
	// fpmtest's PHP-FPM reads no php.ini and has mysqli, for WordPress.
	if resp, body := sluicetest.Get(t, s.srv.URL+"/ext.php"); resp.StatusCode != 200 || body != "mysqli no php.ini" {
		t.Errorf("ext.php: got %d %q", resp.StatusCode, body)
	}
	if resp, _ := sluicetest.Send(t, "HEAD", s.srv.URL+"/hello.php"); resp.StatusCode != 200 {
		t.Errorf("HEAD: got %d", resp.StatusCode)
	}
}

func TestParams(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{Env: map[string]string{"APP_ENV": "test"}})
	resp, body := sluicetest.Get(t, s.srv.URL+"/params.php/a/b?x=1&y=%20",
		"X-Custom", "c1", "X-Custom", "c2", "Proxy", "http://evil.example/", "Cookie", "a=1", "Cookie", "b=2")
	if resp.StatusCode != 200 {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	port := s.srv.Addr[strings.LastIndexByte(s.srv.Addr, ':')+1:]
	for _, want := range []string{
		"SCRIPT_FILENAME=" + filepath.Join(s.root, "params.php"),
		"SCRIPT_NAME=/params.php",
		"PATH_INFO=/a/b",
		"PATH_TRANSLATED=" + filepath.Join(s.root, "a/b"),
		"DOCUMENT_ROOT=" + s.root,
		"REQUEST_URI=/params.php/a/b?x=1&y=%20",
		"QUERY_STRING=x=1&y=%20",
		"REQUEST_METHOD=GET",
		"SERVER_NAME=127.0.0.1",
		"SERVER_PORT=" + port,
		"SERVER_PROTOCOL=HTTP/1.1",
		"REMOTE_ADDR=127.0.0.1",
		"HTTPS=(unset)",
		"HTTP_X_CUSTOM=c1, c2",
		"HTTP_PROXY=(unset)", // httpoxy
		"HTTP_COOKIE=a=1; b=2",
		"APP_ENV=test",
		"GATEWAY_INTERFACE=CGI/1.1",
		"REMOTE_USER=(unset)",
		"getenv=false",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("no %q in\n%s", want, body)
		}
	}
}

func TestPost(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{MaxBody: 4 << 20})
	big := bytes.Repeat([]byte("0123456789abcdef"), 100_000) // 1.6 MB
	want := fmt.Sprintf("%d %x", len(big), md5.Sum(big))
	for _, chunked := range []bool{false, true} {
		var body io.Reader = bytes.NewReader(big)
		if chunked {
			body = io.MultiReader(body) // no length: sent chunked
		}
		req, _ := http.NewRequest("POST", s.srv.URL+"/post.php", body)
		req.Header.Set("Content-Type", "application/octet-stream")
		resp, got := sluicetest.Do(t, req)
		if resp.StatusCode != 200 || got != want {
			t.Errorf("chunked %v: got %d %q, want %q", chunked, resp.StatusCode, got, want)
		}
	}
	// Over max_body, chunked: 413. The body goes 64 KiB over: the server
	// stops reading at max_body, answers and drains at most 256 KiB
	// before it closes (the engine's linger), so a client that sends
	// much more may see its write fail before it reads the answer.
	over := bytes.Repeat([]byte("x"), 4<<20+64<<10)
	req, _ := http.NewRequest("POST", s.srv.URL+"/post.php", io.MultiReader(bytes.NewReader(over)))
	if resp, _ := sluicetest.Do(t, req); resp.StatusCode != 413 {
		t.Errorf("chunked body over max_body: got %d", resp.StatusCode)
	}
	// And the connections are still good.
	if resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
		t.Errorf("after: got %d %q", resp.StatusCode, body)
	}
}

func TestUpload(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	file := bytes.Repeat([]byte("\x00\x01binary\xff"), 50_000)
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	mw.WriteField("name", "photo")
	fw, _ := mw.CreateFormFile("f", "photo.jpg")
	fw.Write(file)
	mw.Close()
	req, _ := http.NewRequest("POST", s.srv.URL+"/upload.php", &buf)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	resp, got := sluicetest.Do(t, req)
	if want := fmt.Sprintf("0 %d %x photo", len(file), md5.Sum(file)); resp.StatusCode != 200 || got != want {
		t.Errorf("got %d %q, want %q", resp.StatusCode, got, want)
	}
}

// TestStream checks that what a script flushes reaches the client before
// the script ends: the script waits for a file the client creates only
// once it has read the first part.
func TestStream(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	marker := filepath.Join(t.TempDir(), "go-on")
	resp, err := sluicetest.Client.Get(s.srv.URL + "/stream.php?wait=" + marker)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "first\n" {
		t.Fatalf("first line %q, %v", line, err)
	}
	write(t, marker, "")
	rest, err := io.ReadAll(br)
	if err != nil || string(rest) != "second\n" {
		t.Fatalf("rest %q, %v", rest, err)
	}
}

func TestStatusAndLocation(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	if resp, body := sluicetest.Get(t, s.srv.URL+"/status.php"); resp.StatusCode != 418 || body != "teapot" {
		t.Errorf("status.php: got %d %q", resp.StatusCode, body)
	}
	resp, _ := sluicetest.Get(t, s.srv.URL+"/location.php")
	if resp.StatusCode != 302 || resp.Header.Get("Location") != "/elsewhere" {
		t.Errorf("location.php: got %d %v", resp.StatusCode, resp.Header)
	}
}

func TestBadHead(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	resp, body := sluicetest.Get(t, s.srv.URL+"/badhead.php")
	if resp.StatusCode != 502 || resp.Header.Get("X-Bad-Head") != "" {
		t.Errorf("got %d %q %v", resp.StatusCode, body, resp.Header)
	}
	if !strings.Contains(s.log.String(), "invalid response head") {
		t.Errorf("log:\n%s", s.log)
	}
}

func TestStderr(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	if resp, body := sluicetest.Get(t, s.srv.URL+"/stderr.php"); resp.StatusCode != 200 || body != "ok" {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	log := s.log.String()
	if !strings.Contains(log, `oops \\x1b[31mred`) || strings.Contains(log, "\x1b") || strings.Contains(log, "\nforged line") {
		t.Errorf("stderr not logged escaped:\n%s", log)
	}
}

func TestSlowHeaderTimeout(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{ResponseHeaderTimeout: 300 * time.Millisecond})
	marker := filepath.Join(t.TempDir(), "never")
	resp, body := sluicetest.Get(t, s.srv.URL+"/wait.php?wait="+marker)
	write(t, marker, "") // let the script end
	if resp.StatusCode != 504 {
		t.Errorf("got %d %q", resp.StatusCode, body)
	}
}

// TestMaxChildren sends 20 requests at once to a pool of 2 children:
// with max_conns 2, they wait in Sluice's queue and are all served.
func TestMaxChildren(t *testing.T) {
	s := newSite(t, fpmtest.Options{Children: 2}, fastcgi.Options{Options: upstreamOpts(2)})
	var wg sync.WaitGroup
	errs := make(chan string, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := sluicetest.Client.Get(s.srv.URL + "/slow.php")
			if err != nil {
				errs <- err.Error()
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(b) != "slow" {
				errs <- fmt.Sprintf("%d %q", resp.StatusCode, b)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

// TestBigResponse streams 10 MB through a server whose memory must not
// grow with it.
func TestBigResponse(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	want := md5.Sum(bytes.Repeat([]byte("0123456789abcdef"), 4096*160))
	h := md5.New()
	buf := make([]byte, 32<<10)
	sluicetest.Get(t, s.srv.URL+"/hello.php") // a connection to reuse
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	resp, err := sluicetest.Client.Get(s.srv.URL + "/big.php")
	if err != nil {
		t.Fatal(err)
	}
	n, err := io.CopyBuffer(h, resp.Body, buf)
	resp.Body.Close()
	runtime.ReadMemStats(&after)
	if err != nil || n != 10<<20 || !bytes.Equal(h.Sum(nil), want[:]) {
		t.Fatalf("got %d bytes, %v", n, err)
	}
	// Client and server together: far less than the response.
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Errorf("a 10 MB response allocated %d bytes", alloc)
	}
}

// TestHealthCheck checks PHP-FPM by its ping.path: down when it is
// killed, up again when it is back.
func TestHealthCheck(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{Options: upstream.Options{MaxConns: 4,
		Health: upstream.Health{Path: fpmtest.PingPath, Interval: 20 * time.Millisecond, Timeout: time.Second, Rise: 1, Fall: 1}}})
	s.fpm.Kill()
	sluicetest.WaitFor(t, "the upstream marked down", func() bool {
		return strings.Contains(s.log.String(), "upstream down: health check failed")
	})
	if resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php"); resp.StatusCode != 503 {
		t.Errorf("upstream down: got %d %q", resp.StatusCode, body)
	}
	s.fpm.Restart(t)
	sluicetest.WaitFor(t, "the upstream up again", func() bool {
		return strings.Contains(s.log.String(), "upstream up again")
	})
	if resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
		t.Errorf("upstream up: got %d %q", resp.StatusCode, body)
	}
}

func TestKilledMidResponse(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	// Before the head: 502.
	marker := filepath.Join(t.TempDir(), "never")
	done := make(chan *http.Response, 1)
	go func() {
		resp, err := sluicetest.Client.Get(s.srv.URL + "/wait.php?wait=" + marker)
		if err != nil {
			t.Error(err)
			close(done)
			return
		}
		resp.Body.Close()
		done <- resp
	}()
	waitStarted(t, marker)
	s.fpm.Kill()
	if resp := <-done; resp == nil || resp.StatusCode != 502 {
		t.Errorf("killed before the head: %v", resp)
	}

	// After the head: the response is cut short.
	s.fpm.Restart(t)
	resp, err := sluicetest.Client.Get(s.srv.URL + "/part.php?wait=" + marker)
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); resp.StatusCode != 200 || line != "part\n" {
		t.Fatalf("got %d %q %v", resp.StatusCode, line, err)
	}
	s.fpm.Kill()
	if rest, err := io.ReadAll(br); err == nil {
		t.Errorf("response not cut short: rest %q", rest)
	}
	resp.Body.Close()

	// The pool recovers.
	s.fpm.Restart(t)
	for range 3 {
		if resp, body := sluicetest.Get(t, s.srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
			t.Errorf("after restart: got %d %q", resp.StatusCode, body)
		}
	}
}

// waitStarted waits until wait.php, waiting for marker, has started.
func waitStarted(t *testing.T, marker string) {
	t.Helper()
	sluicetest.WaitFor(t, "the script to start", func() bool {
		_, err := os.Stat(marker + ".started")
		return err == nil
	})
}

func upstreamOpts(maxConns int) upstream.Options { return upstream.Options{MaxConns: maxConns} }

func upstreamAddrs(addrs ...string) upstream.Options {
	return upstream.Options{Upstreams: addrs, MaxConns: 4}
}

// TestClientGone checks that a client that goes while its script runs
// frees the connection to PHP-FPM, rather than hold it until the
// header timeout.
func TestClientGone(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	marker := filepath.Join(t.TempDir(), "go-on")
	defer write(t, marker, "")
	c, err := net.Dial("tcp", s.srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /wait.php?wait=%s HTTP/1.1\r\nHost: x\r\n\r\n", marker)
	waitStarted(t, marker)
	c.Close()
	sluicetest.WaitFor(t, "the request given up", func() bool {
		return strings.Contains(s.log.String(), "client went away while the script was running")
	})
}

// TestFrontController runs one script for every path.
func TestFrontController(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{Script: "params.php"})
	resp, body := sluicetest.Get(t, s.srv.URL+"/blog/2024/post?x=1")
	for _, want := range []string{"SCRIPT_NAME=/params.php\n", "PATH_INFO=(unset)\n", "REQUEST_URI=/blog/2024/post?x=1\n",
		"SCRIPT_FILENAME=" + filepath.Join(s.root, "params.php") + "\n"} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("no %q in %d\n%s", want, resp.StatusCode, body)
		}
	}
}

// TestTCP reaches PHP-FPM on 127.0.0.1, spelt host:port and tcp://.
func TestTCP(t *testing.T) {
	f := fpmtest.Start(t, fpmtest.Options{TCP: true})
	root := t.TempDir()
	write(t, filepath.Join(root, "hello.php"), scripts["hello.php"])
	for _, addr := range []string{f.Addr(), "tcp://" + f.Addr()} {
		logger, _ := sluicetest.Logger()
		cl, err := fastcgi.New(fastcgi.Options{Options: upstreamAddrs(addr), Root: root, Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		srv := sluicetest.NewServer(t, pipe.Handler(cl))
		if resp, body := sluicetest.Get(t, srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
			t.Errorf("%s: got %d %q", addr, resp.StatusCode, body)
		}
		cl.Close()
	}
}

// TestRemoteUser checks that REMOTE_USER comes only from a user an
// authentication component admitted, never from the client's
// Authorization field alone, and that Authorization reaches the
// application only when no such component took it.
func TestRemoteUser(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	admit := pipe.Pipe(func(c *pipe.Conn) bool {
		c.SetValue("user", "alice")
		return true
	})
	authed := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{admit, s.cl}))
	auth := "Basic YWxpY2U6c2VjcmV0" // alice:secret
	// Without an authentication component, the credentials are the
	// application's own: PHP reads them.
	_, body := sluicetest.Get(t, s.srv.URL+"/params.php", "Authorization", auth)
	for _, want := range []string{"REMOTE_USER=(unset)\n", "HTTP_AUTHORIZATION=" + auth + "\n", "PHP_AUTH_USER=alice\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("without an authentication component, no %q in\n%s", want, body)
		}
	}
	// With one, they were Sluice's: they go no further.
	_, body = sluicetest.Get(t, authed.URL+"/params.php", "Authorization", auth)
	for _, want := range []string{"REMOTE_USER=alice\n", "HTTP_AUTHORIZATION=(unset)\n", "PHP_AUTH_USER=(unset)\n"} {
		if !strings.Contains(body, want) {
			t.Errorf("with a user admitted, no %q in\n%s", want, body)
		}
	}
}

// TestRetryUnreachable balances over a socket nobody listens on and
// PHP-FPM: a refused connection sent nothing, so the request goes to
// the other, and the dead one is left out after failures (passive
// checks).
func TestRetryUnreachable(t *testing.T) {
	f := fpmtest.Start(t, fpmtest.Options{})
	root := t.TempDir()
	write(t, filepath.Join(root, "hello.php"), scripts["hello.php"])
	logger, log := sluicetest.Logger()
	dead := "unix:" + filepath.Join(t.TempDir(), "nobody.sock")
	cl, err := fastcgi.New(fastcgi.Options{Options: upstream.Options{Upstreams: []string{dead, f.Addr()}, MaxConns: 4},
		Root: root, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	srv := sluicetest.NewServer(t, pipe.Handler(cl))
	for range 6 {
		if resp, body := sluicetest.Get(t, srv.URL+"/hello.php"); resp.StatusCode != 200 || body != "hello" {
			t.Fatalf("got %d %q", resp.StatusCode, body)
		}
	}
	if l := log.String(); !strings.Contains(l, "cannot connect to upstream") || !strings.Contains(l, "upstream down after failed requests") ||
		!strings.Contains(l, `fix="no socket at that path: start the FastCGI server (php-fpm, say), or correct the path in fastcgi"`) {
		t.Errorf("log:\n%s", l)
	}
}

// TestEnvWins: a configured env variable wins over the one the request
// would set (an HTTP_ field, SERVER_NAME), whatever the order PHP-FPM
// keeps duplicates in: the request's is not sent at all.
func TestEnvWins(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{Env: map[string]string{
		"HTTP_X_CUSTOM": "configured", "SERVER_NAME": "www.example", "APP_ENV": "test"}})
	resp, body := sluicetest.Get(t, s.srv.URL+"/params.php", "X-Custom", "from-client")
	for _, want := range []string{"HTTP_X_CUSTOM=configured\n", "SERVER_NAME=www.example\n", "APP_ENV=test\n"} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("want %q; got %d:\n%s", want, resp.StatusCode, body)
		}
	}
}

// TestInterimStatus: a script that sets a 1xx status (103 Early Hints)
// gets its response through as 200, Link field and body, not a 502.
func TestInterimStatus(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	write(t, filepath.Join(s.root, "hints.php"), `<?php http_response_code(103); header('Link: </a.css>; rel=preload'); echo "hinted";`)
	resp, body := sluicetest.Get(t, s.srv.URL+"/hints.php")
	if resp.StatusCode != 200 || body != "hinted" || resp.Header.Get("Link") != "</a.css>; rel=preload" {
		t.Errorf("got %d %q %v; log:\n%s", resp.StatusCode, body, resp.Header, s.log)
	}
}

// TestLocalRedirect: a Location that is a path, without Status (RFC 3875
// §6.2.2; PHP sends none with header('Location: /x', true, 200)), runs
// the path's script as a GET without a body, within the request; a
// Status with it stays a client redirect; a loop ends in 500 after 10
// hops; a Location that leaves the root or holds a control byte is 502.
func TestLocalRedirect(t *testing.T) {
	s := newSite(t, fpmtest.Options{}, fastcgi.Options{})
	for name, body := range map[string]string{
		"local.php":  `<?php file_put_contents(__DIR__ . '/local-ran', 'x', FILE_APPEND); header('Location: /params.php/p?q=1', true, 200); echo "dropped";`,
		"loop.php":   `<?php header('Location: /loop.php', true, 200);`,
		"above.php":  `<?php header('Location: /%2e%2e/etc/passwd', true, 200);`,
		"ctl.php":    `<?php header('Location: /a%0a.php', true, 200);`,
		"twice.php":  `<?php header('Location: /local.php', true, 200);`,
		"client.php": `<?php header('Location: /hello.php');`, // PHP adds Status: 302
	} {
		write(t, filepath.Join(s.root, name), body)
	}
	resp, body := sluicetest.RoundTrip(t, s.srv.Addr, "POST /local.php HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 4\r\nConnection: close\r\n\r\nbody")
	for _, want := range []string{"SCRIPT_NAME=/params.php\n", "PATH_INFO=/p\n", "REQUEST_URI=/params.php/p?q=1\n", "QUERY_STRING=q=1\n",
		"REQUEST_METHOD=GET\n", "CONTENT_LENGTH=(unset)\n", "CONTENT_TYPE=(unset)\n"} {
		if resp.StatusCode != 200 || !strings.Contains(body, want) {
			t.Errorf("local redirect: want %q; got %d %v:\n%s", want, resp.StatusCode, resp.Header, body)
		}
	}
	if strings.Contains(body, "dropped") || resp.Header.Get("Location") != "" {
		t.Errorf("the redirecting response leaked: %v %q", resp.Header, body)
	}
	if resp, body := sluicetest.Get(t, s.srv.URL+"/twice.php"); resp.StatusCode != 200 || !strings.Contains(body, "SCRIPT_NAME=/params.php") {
		t.Errorf("two hops: got %d %q", resp.StatusCode, body)
	}
	if resp, _ := sluicetest.Get(t, s.srv.URL+"/client.php"); resp.StatusCode != 302 || resp.Header.Get("Location") != "/hello.php" {
		t.Errorf("with Status: got %d %v", resp.StatusCode, resp.Header)
	}
	if resp, _ := sluicetest.Get(t, s.srv.URL+"/loop.php"); resp.StatusCode != 500 || !strings.Contains(s.log.String(), "too many local redirects") {
		t.Errorf("loop: got %d; log:\n%s", resp.StatusCode, s.log)
	}
	for _, p := range []string{"/above.php", "/ctl.php"} {
		if resp, _ := sluicetest.Get(t, s.srv.URL+p); resp.StatusCode != 502 || !strings.Contains(s.log.String(), "invalid local redirect") {
			t.Errorf("%s: got %d; log:\n%s", p, resp.StatusCode, s.log)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(s.root, "local-ran")); len(b) != 2 {
		t.Errorf("local.php ran %d times, want 2", len(b))
	}
}
