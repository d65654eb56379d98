package redisstore_test

import (
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// redisServer is a private redis-server (Debian's redis-server package)
// listening on a Unix socket in a test's temporary directory, with
// nothing saved to disk. The test may stop it and start it again on the
// same socket; it is killed when the test ends.
type redisServer struct {
	t    testing.TB
	bin  string
	dir  string
	Sock string   // the socket's path
	args []string // more arguments for redis-server
	cmd  *exec.Cmd
	done chan struct{} // closed once cmd has exited
}

// startRedis starts a private redis-server with more arguments args
// ("--requirepass", "secret"), or skips the test (fails it under CI=1)
// when the program is missing.
func startRedis(t testing.TB, args ...string) *redisServer {
	t.Helper()
	dir := t.TempDir()
	r := &redisServer{t: t, bin: sluicetest.NeedTool(t, "redis-server", "redis-server"), dir: dir, Sock: filepath.Join(dir, "redis.sock"), args: args}
	r.Start()
	t.Cleanup(r.Stop)
	return r
}

// Start starts the server and waits until it answers on its socket.
func (r *redisServer) Start() {
	r.t.Helper()
	r.cmd = exec.Command(r.bin,
		"--port", "0", "--unixsocket", r.Sock, "--unixsocketperm", "700",
		"--save", "", "--appendonly", "no", "--dir", r.dir,
		"--logfile", filepath.Join(r.dir, "redis.log"))
	r.cmd.Args = append(r.cmd.Args, r.args...)
	if err := r.cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	done := make(chan struct{})
	r.done = done
	go func(cmd *exec.Cmd) { cmd.Wait(); close(done) }(r.cmd)
	sluicetest.WaitFor(r.t, "redis-server to answer on "+r.Sock, func() bool {
		select {
		case <-done:
			r.t.Fatalf("redis-server exited; see %s", filepath.Join(r.dir, "redis.log"))
		default:
		}
		return r.ping()
	})
}

// ping reports whether the server answers PING.
func (r *redisServer) ping() bool {
	c, err := net.Dial("unix", r.Sock)
	if err != nil {
		return false
	}
	defer c.Close()
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	buf := make([]byte, 7)
	n, _ := c.Read(buf)
	// A server that wants a password refuses PING, but answers.
	return string(buf[:n]) == "+PONG\r\n" || strings.HasPrefix(string(buf[:n]), "-NOAUTH")
}

// Stop kills the server, if it runs, and waits until it has exited.
func (r *redisServer) Stop() {
	if r.cmd == nil {
		return
	}
	r.cmd.Process.Kill()
	<-r.done
	r.cmd = nil
}
