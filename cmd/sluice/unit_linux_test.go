package main_test

import (
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// freeLowPorts returns n ports below 1024 that nothing listens on at
// 127.0.0.1 now (the test runs as root, so it may bind them to see).
func freeLowPorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	for p := 900; p < 1024 && len(ports) < n; p++ {
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			continue
		}
		ln.Close()
		ports = append(ports, p)
	}
	if len(ports) < n {
		t.Skipf("no %d free ports from 900 to 1023 on 127.0.0.1", n)
	}
	return ports
}

// As contrib/sluice.service runs it — an unprivileged user from the
// start, with CAP_NET_BIND_SERVICE as an ambient capability, a config
// without user: — Sluice serves on a port below 1024, in one process and
// with workers (which the master execs, keeping the capability), and a
// reload opens a second such port. (The rest of the unit's sandbox needs
// a running systemd; TestServiceUnitSecurity rates it.)
func TestUnitUnprivilegedLowPort(t *testing.T) {
	u := nobody(t)
	dir := sharedDir(t)
	bin := filepath.Join(dir, "sluice")
	copyFile(t, binary, bin, 0o755)
	var uid, gid uint32
	fmt.Sscan(u.Uid, &uid)
	fmt.Sscan(u.Gid, &gid)
	want := strings.Repeat(u.Uid+" ", 3) + u.Uid
	for _, workers := range []int{0, 1} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) {
			if workers > 0 {
				needWorkers(t)
			}
			ports := freeLowPorts(t, 2)
			file := filepath.Join(dir, fmt.Sprintf("site%d.yaml", workers))
			routes := "routes:\n  - match: /\n    pipeline: [{text: hi}]\n"
			writeConfig(t, file, fmt.Sprintf("listen: 127.0.0.1:%d\nworkers: %d\n%s", ports[0], workers, routes))
			// A short grace: the reload's old worker drains the test
			// client's idle connection until then.
			cmd := exec.Command(bin, "serve", "-c", file, "--shutdown-grace", "1s")
			cmd.Env = rootEnv()
			cmd.SysProcAttr = &syscall.SysProcAttr{
				Credential:  &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
				AmbientCaps: []uintptr{10}, // CAP_NET_BIND_SERVICE
			}
			s := startCmd(t, cmd)
			pids := []int{s.cmd.Process.Pid}
			if workers > 0 {
				s.waitLog(t, "workers ready", 1)
				pids = append(pids, s.workerPids()[1])
			}
			for _, pid := range pids {
				if got, _, _ := procIDs(t, pid); got != want {
					t.Errorf("process %d: Uid %q, want %q", pid, got, want)
				}
			}
			if code, _, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[0])); code != 200 || body != "hi" {
				t.Errorf("GET :%d = %d %q", ports[0], code, body)
			}
			writeConfig(t, file, fmt.Sprintf("listen: [127.0.0.1:%d, 127.0.0.1:%d]\nworkers: %d\n%s", ports[0], ports[1], workers, routes))
			s.cmd.Process.Signal(syscall.SIGHUP)
			s.waitLog(t, "msg=listening addr=127.0.0.1:"+strconv.Itoa(ports[1]), 1)
			if workers > 0 {
				s.waitLog(t, "msg=reloaded", 1)
			}
			if code, _, body := get(t, fmt.Sprintf("http://127.0.0.1:%d/", ports[1])); code != 200 || body != "hi" {
				t.Errorf("after the reload, GET :%d = %d %q", ports[1], code, body)
			}
			if code := s.stop(t, syscall.SIGTERM); code != 0 {
				t.Errorf("exit status %d\n%s", code, s.stderr())
			}
			if log := s.stderr(); strings.Contains(log, "level=ERROR") || strings.Contains(log, "root") {
				t.Errorf("log:\n%s", log)
			}
		})
	}
}
