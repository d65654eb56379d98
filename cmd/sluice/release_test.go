package main_test

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// repoRoot is the top of the repository, where the Makefile is.
func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// stamped is the binary `make build` makes, built once for the tests
// that need it, and the version git describe gives for the checkout.
var stamped struct {
	once    sync.Once
	path    string
	version string
	err     string
}

// stampedBinary builds sluice as `make build` does, stamped with the
// checkout's version, and returns its path and that version. It skips
// outside a git checkout, where make build stamps none.
func stampedBinary(t *testing.T) (path, version string) {
	t.Helper()
	sluicetest.NeedTool(t, "make", "make")
	sluicetest.NeedTool(t, "git", "git")
	top := repoRoot(t)
	stamped.once.Do(func() {
		out, err := exec.Command("git", "-C", top, "describe", "--tags", "--always", "--dirty").Output()
		if err != nil {
			stamped.err = "skip: not a git checkout: make build stamps no version"
			return
		}
		stamped.version = strings.TrimSpace(string(out))
		stamped.path = filepath.Join(filepath.Dir(binary), "stamped", "sluice")
		make := exec.Command("make", "-s", "-C", top, "build", "BIN="+stamped.path)
		if out, err := make.CombinedOutput(); err != nil {
			stamped.err = "make build: " + err.Error() + "\n" + string(out)
		}
	})
	if after, ok := strings.CutPrefix(stamped.err, "skip: "); ok {
		t.Skip(after)
	}
	if stamped.err != "" {
		t.Fatal(stamped.err)
	}
	return stamped.path, stamped.version
}

// `make build` stamps the binary with git describe's version, which
// `sluice version` prints; the Server field shows it only when
// server_header asks for it with $version.
func TestVersionStamped(t *testing.T) {
	bin, want := stampedBinary(t)
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("sluice version: %v", err)
	}
	if got, want := string(out), "sluice "+want+" "+runtime.Version()+"\n"; got != want {
		t.Errorf("sluice version of make build's binary = %q, want %q", got, want)
	}
	s := startCmd(t, exec.Command(bin, "serve", "--root", t.TempDir(), "--listen", "127.0.0.1:0"))
	resp, _ := sluicetest.Get(t, "http://"+s.addr+"/")
	if got := resp.Header.Values("Server"); len(got) != 1 || got[0] != "sluice" {
		t.Errorf("Server = %q, want sluice (no version unless server_header says so)", got)
	}
	// server_header: "sluice/$version" asks for it.
	file := filepath.Join(t.TempDir(), "v.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nserver_header: \"sluice/$version\"\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	vs := startCmd(t, exec.Command(bin, "serve", "-c", file))
	vresp, _ := sluicetest.Get(t, "http://"+vs.addr+"/")
	if got := vresp.Header.Values("Server"); len(got) != 1 || got[0] != "sluice/"+want {
		t.Errorf("Server with server_header \"sluice/$version\" = %q, want %q", got, "sluice/"+want)
	}
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / of an empty root = %d, want 404", resp.StatusCode)
	}
}

// A binary built without the ldflags (go build, as TestMain builds it,
// or go install) reports the version Go embedded: a module version, or
// devel and the commit.
func TestVersionUnstamped(t *testing.T) {
	r := sluice(t, "version")
	re := regexp.MustCompile(`^sluice (v\S+|devel( [0-9a-f]{1,12}(-dirty)?)?) go1\.\S+\n$`)
	if r.code != 0 || !re.MatchString(r.stdout) {
		t.Errorf("sluice version of go build's binary = %d %q, want a match of %s", r.code, r.stdout, re)
	}
}
