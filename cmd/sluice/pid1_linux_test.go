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

// As the first process of a PID namespace (a container's PID 1), sluice
// runs itself as its only child and reaps what ends in the namespace:
// the processes CGI programs leave, which would otherwise stay zombies
// of PID 1, one a request. SIGTERM to PID 1 reaches the server, which
// stops gracefully, and PID 1 exits with its status.
func TestPID1ReapsOrphans(t *testing.T) {
	if err := exec.Command("unshare", "--pid", "--fork", "--mount-proc", "true").Run(); err != nil {
		t.Skip("cannot make a PID namespace here (unshare --pid --fork --mount-proc):", err)
	}
	dir := t.TempDir()
	cgiScript(t, dir, "sleep 0.1 </dev/null >/dev/null 2>&1 &\n"+
		"printf 'Content-Type: text/plain\\r\\n\\r\\nok\\n'\n")
	file := filepath.Join(dir, "site.yaml")
	writeConfig(t, file, "listen: 127.0.0.1:0\nroutes: [{match: /, pipeline: [{cgi: {script: run.cgi}}]}]\n")
	s := startCmd(t, exec.Command("unshare", "--pid", "--fork", "--mount-proc", binary, "serve", "-c", file))
	kids, _ := childrenOf(s.cmd.Process.Pid)
	if len(kids) != 1 {
		t.Fatalf("unshare has children %v, want one: PID 1 of the namespace", kids)
	}
	init := kids[0]
	if servers, _ := childrenOf(init); len(servers) != 1 {
		t.Fatalf("PID 1 has children %v, want one: the server", servers)
	}
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
