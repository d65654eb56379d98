package main_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// childrenOf returns the processes whose parent is pid, and how many of
// them are zombies.
func childrenOf(pid int) (kids []int, zombies int) {
	names, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, name := range names {
		b, err := os.ReadFile(name)
		i := bytes.LastIndexByte(b, ')')
		if err != nil || i < 0 {
			continue
		}
		f := bytes.Fields(b[i+1:])
		if len(f) < 2 || string(f[1]) != strconv.Itoa(pid) {
			continue
		}
		k, _ := strconv.Atoi(string(bytes.Fields(b)[0]))
		kids = append(kids, k)
		if string(f[0]) == "Z" {
			zombies++
		}
	}
	return kids, zombies
}

// startAsPID1 starts sluice serve with the config text (written to
// dir/site.yaml) as the first process of a new PID namespace, and returns
// the server (whose cmd is unshare) and PID 1's pid outside the
// namespace. It skips the test where no namespace can be made.
func startAsPID1(t *testing.T, dir, config string) (*server, int) {
	t.Helper()
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skip("cannot make a PID namespace here (unshare --pid --fork --mount-proc):", err)
	}
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, config)
	s := startCmd(t, exec.Command("unshare", "--pid", "--fork", "--mount-proc", binary, "serve", "-c", file))
	kids, _ := childrenOf(s.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("unshare has children %v, want one: PID 1 of the namespace", kids)
	}
	if servers, _ := childrenOf(kids[0]); len(servers) != 1 {
		t.Fatalf("PID 1 has children %v, want one: the server", servers)
	}
	return s, kids[0]
}

// As the first process of a PID namespace (a container's PID 1), sluice
// runs itself as its only child and reaps what ends in the namespace:
// the processes CGI programs leave, which would otherwise stay zombies
// of PID 1, one a request. SIGTERM to PID 1 reaches the server, which
// stops gracefully, and PID 1 exits with its status.
func TestPID1ReapsOrphans(t *testing.T) {
	dir := t.TempDir()
	cgiScript(t, dir, "sleep 0.1 </dev/null >/dev/null 2>&1 &\n"+
		"printf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n")
	s, init := startAsPID1(t, dir, "listen: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{cgi: {script: run.cgi}}]}]\n")
	const requests = 5
	for i := range requests {
		if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "ok\n" {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
	}
	// Each request left a sleep behind, which ends within 0.1 s.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		kids, zombies := childrenOf(init)
		if zombies == 0 && len(kids) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("PID 1's children %v, %d of them zombies, %d requests after: want only the server", kids, zombies, requests)
		}
	}
	if err := syscall.Kill(init, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, s.stderr())
	}
	if log := s.stderr(); !bytes.Contains([]byte(log), []byte(`msg="shutting down"`)) {
		t.Errorf("the server did not stop gracefully:\n%s", log)
	}
}

// A master under PID 1 gets the signals sent to PID 1, and refuses a
// binary upgrade, which would end PID 1 and the namespace with the old
// master: it logs why and serves on.
func TestPID1RefusesUpgrade(t *testing.T) {
	s, init := startAsPID1(t, t.TempDir(), workersConfig(1, "hi"))
	s.waitLog(t, "workers ready", 1)
	if err := syscall.Kill(init, syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	s.waitLog(t, "binary upgrade refused: this master runs under sluice as PID 1", 1)
	if code, _, body := get(t, "http://"+s.addr+"/"); code != 200 || body != "hi" {
		t.Errorf("after the refusal: %d %q", code, body)
	}
	if err := syscall.Kill(init, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := s.wait(t); code != 0 {
		t.Errorf("exit status %d, want 0\n%s", code, s.stderr())
	}
}
