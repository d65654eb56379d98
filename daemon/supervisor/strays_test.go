//go:build linux

package supervisor

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		line string
		want procStat
		ok   bool
	}{
		{"4242 (sleep) S 17 4240 17 0 -1 4194560 96 0 0 0\n", procStat{"sleep", 17, 4240}, true},
		{"7 (a b) c) (d) Z 1 7 7 0 -1\n", procStat{"a b) c) (d", 1, 7}, true},
		{"9 () R 2 3", procStat{"", 2, 3}, true},
		{"9 (x) R 2", procStat{}, false},         // no pgrp
		{"9 (x) RR 2 3", procStat{}, false},      // not a state
		{"9 (x) R two 3", procStat{}, false},     // not a number
		{"9 x) R 2 3", procStat{}, false},        // no '('
		{"9 )x( R 2 3", procStat{}, false},       // ')' before '('
		{"", procStat{}, false},                  // empty
		{"9 (x)", procStat{}, false},             // nothing after comm
		{"9 (x) R 2 3 ) 4 5", procStat{}, false}, // the last ')' ends the name: too few fields after it
	} {
		got, ok := parseStat([]byte(tc.line))
		if ok != tc.ok || ok && got != tc.want {
			t.Errorf("parseStat(%q) = %+v, %v; want %+v, %v", tc.line, got, ok, tc.want, tc.ok)
		}
	}
}

// FuzzParseStat: whatever the command's name (a process may set it to
// any 15 bytes but NUL), the fields after it are read back as written,
// and no input makes parseStat panic.
func FuzzParseStat(f *testing.F) {
	f.Add("sleep", 17, 4240, []byte("4242 (sleep) S 17 4240 17"))
	f.Add("a) (b", 1, 1, []byte("9 (x) R"))
	f.Fuzz(func(t *testing.T, comm string, ppid, pgrp int, raw []byte) {
		parseStat(raw)
		if ppid < 0 || pgrp < 0 {
			return
		}
		line := fmt.Sprintf("4242 (%s) S %d %d 17 0 -1\n", comm, ppid, pgrp)
		got, ok := parseStat([]byte(line))
		if !ok || got != (procStat{comm, ppid, pgrp}) {
			t.Fatalf("parseStat(%q) = %+v, %v", line, got, ok)
		}
	})
}

// The master's own process reads as it is.
func TestReadStatSelf(t *testing.T) {
	p, ok := readStat(os.Getpid())
	if !ok || p.ppid != os.Getppid() || p.pgrp != syscall.Getpgrp() {
		t.Errorf("readStat(self) = %+v, %v; want ppid %d, pgrp %d", p, ok, os.Getppid(), syscall.Getpgrp())
	}
}

// BenchmarkSweep is one look at the process table for strays, as the
// master takes once a second: its cost grows with the processes on the
// machine (reported as procs/op).
func BenchmarkSweep(b *testing.B) {
	s := &strays{on: true}
	log := slog.New(slog.DiscardHandler)
	entries, _ := os.ReadDir("/proc")
	procs := 0
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err == nil {
			procs++
		}
	}
	for b.Loop() {
		s.sweep(log)
	}
	b.ReportMetric(float64(procs), "procs/op")
}

// orphan starts sh -c script as one of s's own children, waits for it
// to exit, and returns the pid the script printed: a child it left, now
// re-parented to this process, a subreaper.
func orphan(t *testing.T, s *strays, script string, ownGroup bool) int {
	t.Helper()
	cmd := exec.Command("/bin/sh", "-c", script)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: ownGroup}
	var out bytes.Buffer
	cmd.Stdout = &out
	if err := s.start(cmd); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	s.reaped(cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(out.String()))
	if err != nil {
		t.Fatalf("the script printed %q", out.String())
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGKILL) })
	return pid
}

// state returns the state letter of process pid (R, S, Z...), or 0 if it
// is gone.
func state(pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if i := bytes.LastIndexByte(b, ')'); err == nil && i >= 0 && i+2 < len(b) {
		return b[i+2]
	}
	return 0
}

// exists reports whether pid is in the process table, if only as a zombie.
func exists(pid int) bool {
	_, err := os.Stat(fmt.Sprintf("/proc/%d", pid))
	return err == nil
}

// A stray (a child this process did not start, in another process group)
// is killed, logged and then reaped; an orphan in this process's own
// group is left to run, and reaped once it has exited; the children it
// started itself are neither.
func TestSweepKillsStraysAndReapsOrphans(t *testing.T) {
	var s strays
	if err := s.adopt(); err != nil {
		t.Skip("cannot become a child subreaper:", err)
	}
	var logged bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	own := exec.Command("sleep", "1000")
	if err := s.start(own); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { own.Process.Kill(); own.Wait() })

	stray := orphan(t, &s, "sleep 1000 >/dev/null & echo $!", true)
	mine := orphan(t, &s, "sleep 0.5 >/dev/null & echo $!", false)
	if p, ok := readStat(stray); !ok || p.ppid != os.Getpid() {
		t.Fatalf("the stray's parent: %+v %v, want this process (%d)", p, ok, os.Getpid())
	}
	if alive := s.sweep(log); alive != 1 {
		t.Errorf("sweep found %d strays alive, want 1", alive)
	}
	if st := state(mine); st == 'Z' || st == 0 {
		t.Errorf("the orphan in this process's group was killed (state %q)", st)
	}
	if !strings.Contains(logged.String(), "pid="+strconv.Itoa(stray)+" command=sleep") {
		t.Errorf("log: %q", logged.String())
	}
	for deadline := time.Now().Add(10 * time.Second); exists(stray) || exists(mine); time.Sleep(10 * time.Millisecond) {
		if exists(mine) {
			if p, _ := readStat(mine); p.ppid == os.Getpid() && p.pgrp != syscall.Getpgrp() {
				t.Fatalf("the orphan in this group moved to group %d", p.pgrp)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the sweeps: stray there %v, orphan there %v", exists(stray), exists(mine))
		}
		s.sweep(log)
	}
	if strings.Count(logged.String(), "killed a process") != 1 {
		t.Errorf("want one warning, for the stray: %q", logged.String())
	}
	if p, ok := readStat(own.Process.Pid); !ok || p.ppid != os.Getpid() {
		t.Errorf("a child of this process's own is gone: %+v %v", p, ok)
	}
}
