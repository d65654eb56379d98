package files_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/sluicetest"
)

// serve starts an engine.Server with h on a loopback port and returns its
// address; the server is shut down when the test ends.
func serve(t testing.TB, h engine.Handler) string {
	t.Helper()
	srv := sluicetest.NewServer(t, h,
		sluicetest.Configure(func(s *engine.Server) { s.ServerHeader = "sluice" }))
	return srv.Addr
}

// serveDir serves dir with files.New and returns the base URL.
func serveDir(t testing.TB, dir string, opts files.Options) string {
	t.Helper()
	fsrv, err := files.New(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fsrv.Close() })
	return "http://" + serve(t, fsrv)
}

// writeFiles creates the files named in m (slash-separated, relative to
// dir), with their parent directories.
func writeFiles(t testing.TB, dir string, m map[string]string) {
	t.Helper()
	for name, content := range m {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func hostOf(url string) string { return strings.TrimPrefix(url, "http://") }

// serveAsNobody serves dir with default options and returns the base
// URL. Run as root, it serves from a child process (this test binary, see
// TestHelperServeAsNobody) running as uid and gid 65534, because root may
// read any file and permission tests would prove nothing.
func serveAsNobody(t *testing.T, dir string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		return serveDir(t, dir, files.Options{})
	}
	// The unprivileged child must reach dir and run a copy of the binary.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		os.Chmod(d, 0o755)
	}
	binDir := t.TempDir()
	os.Chmod(binDir, 0o755)
	bin := filepath.Join(binDir, "files.test")
	data, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHelperServeAsNobody$")
	cmd.Env = append(os.Environ(), "FILES_HELPER_ROOT="+dir)
	asNobody(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close() // the child exits when its stdin closes
		cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if err != nil || !ok {
		t.Fatalf("helper server said %q, %v", line, err)
	}
	return "http://" + addr
}

// TestHelperServeAsNobody is the child process of serveAsNobody, not a
// test: it serves $FILES_HELPER_ROOT until its stdin closes.
func TestHelperServeAsNobody(t *testing.T) {
	root := os.Getenv("FILES_HELPER_ROOT")
	if root == "" {
		t.Skip("helper process for serveAsNobody")
	}
	s, err := files.New(root, files.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := sluicetest.NewServer(t, s)
	fmt.Printf("ADDR %s\n", srv.Addr)
	io.Copy(io.Discard, os.Stdin)
}
