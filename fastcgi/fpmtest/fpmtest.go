//go:build unix

package fpmtest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

// StartTimeout bounds PHP-FPM's start: a bound on a hung test, not a
// figure a test asserts.
const StartTimeout = time.Minute

// PingPath is the pool's ping.path: a FastCGI request for it is answered
// "pong" by PHP-FPM itself, without running a script.
const PingPath = "/fpm-ping"

// Options configures a private PHP-FPM. The zero value is a pool of 4
// static children on a Unix socket, with the mysqlnd and mysqli
// extensions.
type Options struct {
	// Children is the pool's pm.max_children, all started at once (pm
	// static); default 4.
	Children int

	// TCP listens on 127.0.0.1 and a free port instead of a Unix socket.
	TCP bool

	// INI sets php.ini directives ("memory_limit": "64M"), on top of
	// PHP's built-in defaults (no php.ini file is read).
	INI map[string]string

	// Pool sets directives of the pool's section ("request_terminate_timeout":
	// "5s"), after (and so over) the ones Start writes.
	Pool map[string]string

	// Extensions are shared extensions to load besides mysqlnd and mysqli
	// (names as in extension_dir: "gd", "exif"). A missing one fails the
	// test.
	Extensions []string
}

// FPM is a running PHP-FPM. Its methods are safe for concurrent use.
type FPM struct {
	addr string // "unix:/path" or "127.0.0.1:port"
	dir  string
	bin  string
	args []string

	mu       sync.Mutex // guards the fields below against Restart
	cmd      *exec.Cmd
	exited   chan struct{}
	waitErr  error
	stopOnce sync.Once
}

// Start starts a PHP-FPM for the test and returns once it accepts
// connections. The test's cleanup stops it (SIGKILL to its process
// group: the master and every worker). Without php-fpm installed the
// test is skipped, or, under CI=1, fails.
func Start(t testing.TB, opts Options) *FPM {
	t.Helper()
	bin := Binary(t)
	dir, err := os.MkdirTemp("", "sluice-fpm-") // short: a socket path has 108 bytes
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	children := opts.Children
	if children <= 0 {
		children = 4
	}
	f := &FPM{dir: dir, exited: make(chan struct{})}
	listen := filepath.Join(dir, "php-fpm.sock")
	f.addr = "unix:" + listen
	if opts.TCP {
		port := sluicetest.FreePort(t)
		listen = "127.0.0.1:" + strconv.Itoa(port)
		f.addr = listen
	}
	var conf strings.Builder
	fmt.Fprintf(&conf, "[global]\npid = %s\nerror_log = %s\ndaemonize = no\nlog_level = notice\nprocess_control_timeout = 0\n\n",
		filepath.Join(dir, "php-fpm.pid"), filepath.Join(dir, "php-fpm.log"))
	fmt.Fprintf(&conf, "[test]\nlisten = %s\nlisten.mode = 0666\npm = static\npm.max_children = %d\n", listen, children)
	fmt.Fprintf(&conf, "ping.path = %s\nping.response = pong\ncatch_workers_output = yes\nclear_env = yes\nsecurity.limit_extensions = .php\n", PingPath)
	for _, k := range sortedKeys(opts.Pool) {
		fmt.Fprintf(&conf, "%s = %s\n", k, opts.Pool[k])
	}
	confFile := filepath.Join(dir, "php-fpm.conf")
	if err := os.WriteFile(confFile, []byte(conf.String()), 0o644); err != nil {
		t.Fatal(err)
	}

	args := []string{"-F", "-n", "-y", confFile, "-p", dir}
	if os.Geteuid() == 0 {
		args = append(args, "-R") // the workers run as root, as the test does
	}
	extDir := extensionDir(bin)
	for _, e := range append([]string{"mysqlnd", "mysqli"}, opts.Extensions...) {
		if _, err := os.Stat(filepath.Join(extDir, e+".so")); err != nil {
			sluicetest.MissingTool(t, "PHP extension "+e, extensionPackage(e))
		}
		args = append(args, "-d", "extension="+e)
	}
	for _, k := range sortedKeys(opts.INI) {
		args = append(args, "-d", k+"="+opts.INI[k])
	}
	f.bin, f.args = bin, args
	t.Cleanup(f.Kill)
	f.start(t)
	return f
}

// Restart starts PHP-FPM again, at the same address with the same
// configuration, after Kill or Stop (it kills it first if it runs), and
// returns once it accepts connections.
func (f *FPM) Restart(t testing.TB) {
	t.Helper()
	f.Kill()
	f.mu.Lock()
	f.stopOnce = sync.Once{}
	f.exited = make(chan struct{})
	f.cmd = nil // until started
	f.mu.Unlock()
	f.start(t)
}

// start runs PHP-FPM and waits until it accepts connections.
func (f *FPM) start(t testing.TB) {
	t.Helper()
	cmd := exec.Command(f.bin, f.args...)
	out, err := os.OpenFile(filepath.Join(f.dir, "stderr.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = sysProcAttr()
	cmd.Env = []string{"PATH=/usr/local/bin:/usr/bin:/bin", "LC_ALL=C"}
	err = cmd.Start()
	out.Close()
	if err != nil {
		t.Fatalf("php-fpm: %v", err)
	}
	f.mu.Lock()
	f.cmd = cmd
	exited := f.exited
	f.mu.Unlock()
	go func() { f.waitErr = cmd.Wait(); close(exited) }()

	network, address := "tcp", f.addr
	if a, ok := strings.CutPrefix(f.addr, "unix:"); ok {
		network, address = "unix", a
	}
	deadline := time.Now().Add(StartTimeout)
	for {
		if c, err := net.DialTimeout(network, address, time.Second); err == nil {
			c.Close()
			return
		}
		select {
		case <-exited:
			t.Fatalf("php-fpm exited: %v\n%s", f.waitErr, f.Log())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("php-fpm did not start within %v:\n%s", StartTimeout, f.Log())
		}
	}
}

// Addr returns the upstream to configure: "unix:/path/php-fpm.sock", or
// "127.0.0.1:PORT" with Options.TCP.
func (f *FPM) Addr() string { return f.addr }

// Dir returns the server's private directory (its configuration, logs
// and socket), removed when the test ends.
func (f *FPM) Dir() string { return f.dir }

// Log returns what PHP-FPM logged so far: its error log and its
// standard output and error (workers' output included).
func (f *FPM) Log() string {
	a, _ := os.ReadFile(filepath.Join(f.dir, "php-fpm.log"))
	b, _ := os.ReadFile(filepath.Join(f.dir, "stderr.log"))
	return string(a) + string(b)
}

// Kill kills PHP-FPM's master and workers at once (SIGKILL to the
// process group), cutting any response short, and waits for the master
// to exit and the listening socket to refuse connections (the workers
// hold it too). It may be called more than once.
func (f *FPM) Kill() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmd == nil {
		return // never started
	}
	f.stopOnce.Do(func() {
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.exited
		f.waitClosed()
	})
}

// waitClosed waits, up to StartTimeout, until the server's address
// refuses connections.
func (f *FPM) waitClosed() {
	network, address := "tcp", f.addr
	if a, ok := strings.CutPrefix(f.addr, "unix:"); ok {
		network, address = "unix", a
	}
	deadline := time.Now().Add(StartTimeout)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout(network, address, time.Second)
		if err != nil {
			return
		}
		c.Close()
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		time.Sleep(5 * time.Millisecond)
	}
}

// Stop asks PHP-FPM to stop (SIGQUIT: workers finish their requests),
// waits for it, and kills what is left after StartTimeout.
func (f *FPM) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.cmd == nil {
		return // never started
	}
	f.stopOnce.Do(func() {
		f.cmd.Process.Signal(syscall.SIGQUIT)
		select {
		case <-f.exited:
		case <-time.After(StartTimeout):
		}
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		<-f.exited
		f.waitClosed()
	})
}

// Binary returns the path of php-fpm: /usr/sbin/php-fpm8.2, or a php-fpm*
// on the PATH. Without one the test is skipped, or under CI=1 fails.
func Binary(t testing.TB) string {
	t.Helper()
	for _, p := range []string{"/usr/sbin/php-fpm8.2"} {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"php-fpm", "php-fpm8.2", "php-fpm8.3", "php-fpm8.4"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if m, _ := filepath.Glob(filepath.Join(dir, "php-fpm*")); len(m) > 0 {
			return m[0]
		}
	}
	sluicetest.MissingTool(t, "php-fpm", "php-fpm")
	return ""
}

// extensionDir asks bin for its compiled-in extension_dir.
func extensionDir(bin string) string {
	out, err := exec.Command(bin, "-n", "-i").Output()
	if err == nil {
		for line := range strings.Lines(string(out)) {
			if v, ok := strings.CutPrefix(line, "extension_dir => "); ok {
				v, _, _ = strings.Cut(v, " => ")
				return strings.TrimSpace(v)
			}
		}
	}
	m, _ := filepath.Glob("/usr/lib/php/2*")
	if len(m) > 0 {
		return m[len(m)-1]
	}
	return ""
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// extensionPackage is the Debian package that holds the PHP extension
// e: mysqlnd and mysqli come with php-mysql, the others are php-NAME
// (php-gd).
func extensionPackage(e string) string {
	switch e {
	case "mysqlnd", "mysqli", "pdo_mysql":
		return "php-mysql"
	}
	return "php-" + e
}
