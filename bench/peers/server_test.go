package peers

import (
	"os/exec"
	"syscall"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	// comm may hold spaces and parentheses; fields after it count from 3.
	line := "4242 (a) (b c)) S 17 4242 4242 0 -1 4194560 100 0 0 0 123 45 6 7 20 0 1 0 99 1000 50 18446744073709551615\n"
	st, err := parseStat([]byte(line))
	if err != nil {
		t.Fatal(err)
	}
	if st != (stat{ppid: 17, utime: 123, stime: 45, cutime: 6, cstime: 7}) {
		t.Errorf("parseStat = %+v", st)
	}
	for _, bad := range []string{"4242 no parenthesis S 1", "4242 (x) S 1 2 3", "4242 (x) S 1 2 3 4 5 6 7 8 9 10 11 x 1 2 3 4"} {
		if _, err := parseStat([]byte(bad)); err == nil {
			t.Errorf("parseStat(%q): no error", bad)
		}
	}
}

const smapsRollup = `00400000-7ffedd9de000 ---p 00000000 00:00 0                              [rollup]
Rss:               11188 kB
Pss:                4714 kB
Pss_Dirty:          4639 kB
Pss_Anon:           1964 kB
Shared_Clean:       1356 kB
Private_Dirty:      2028 kB
Swap:                  0 kB
SwapPss:               0 kB
`

func TestParseSmapsRollup(t *testing.T) {
	rss, pss, err := parseSmapsRollup([]byte(smapsRollup))
	if err != nil {
		t.Fatal(err)
	}
	if rss != 11188<<10 || pss != 4714<<10 {
		t.Errorf("rss, pss = %d, %d; want %d, %d (Pss_Dirty and SwapPss are not Pss)", rss, pss, 11188<<10, 4714<<10)
	}
	if _, _, err := parseSmapsRollup([]byte("Rss: 10 kB\n")); err == nil {
		t.Error("no Pss line: no error")
	}
}

// TestTreeUsage runs a shell whose child burns CPU: Usage must count the
// child's time (the parent's own is near zero) and Memory must list both
// processes, parent first.
func TestTreeUsage(t *testing.T) {
	cmd := exec.Command("sh", "-c", `sh -c 'while :; do :; done' & wait`)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		cmd.Wait()
	})
	s := &Server{Pid: cmd.Process.Pid}
	deadline := time.Now().Add(30 * time.Second)
	for {
		u, err := s.Usage()
		if err != nil {
			t.Fatal(err)
		}
		if u.Procs == 2 && u.CPU >= 200*time.Millisecond {
			if u.RSS <= 0 {
				t.Errorf("RSS = %d", u.RSS)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("Usage = %+v: the child's CPU time is not counted", u)
		}
		time.Sleep(20 * time.Millisecond)
	}
	mem, err := s.Memory()
	if err != nil {
		t.Fatal(err)
	}
	if len(mem) != 2 || mem[0].Pid != s.Pid {
		t.Fatalf("Memory = %+v, want the shell then its child", mem)
	}
	for _, m := range mem {
		if m.PSS <= 0 || m.PSS > m.RSS {
			t.Errorf("pid %d: PSS %d, RSS %d: want 0 < PSS <= RSS", m.Pid, m.PSS, m.RSS)
		}
	}
}
