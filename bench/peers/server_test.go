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

func TestParseSchedstat(t *testing.T) {
	for _, c := range []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"1234567 890 12\n", 1234567, true},
		{"0 0 0", 0, true},
		{"1234567 890\n", 0, false},
		{"-5 1 2\n", 0, false},
		{"x 1 2\n", 0, false},
		{"", 0, false},
	} {
		got, err := parseSchedstat([]byte(c.in))
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("parseSchedstat(%q) = %v, %v; want %v, ok %v", c.in, got, err, c.want, c.ok)
		}
	}
}

// TreeRuntime counts this process's threads, and grows once they have
// run: the loop below runs on a CPU for as long as it takes.
func TestTreeRuntime(t *testing.T) {
	pid := syscall.Getpid()
	a, err := TreeRuntime(pid)
	if err != nil || a <= 0 {
		t.Fatalf("TreeRuntime = %v, %v; want a positive time", a, err)
	}
	x := 0
	for i := range 50_000_000 {
		x ^= i
	}
	b, err := TreeRuntime(pid)
	if err != nil || b <= a {
		t.Errorf("TreeRuntime after a loop (%d) = %v, %v; want more than %v", x, b, err, a)
	}
	if _, err := TreeRuntime(1 << 30); err == nil {
		t.Error("TreeRuntime of a process that does not exist: no error")
	}
}

// ProcsRuntime counts the processes whose command line holds its text,
// and only those: a child sleeping under "sleep" is counted with
// "sleep 30" and left out with text no command line holds.
func TestProcsRuntime(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	pid := syscall.Getpid()
	if d, err := ProcsRuntime(pid, "sleep 30"); err != nil || d < 0 {
		t.Errorf("ProcsRuntime(sleep 30) = %v, %v; want the child's time", d, err)
	}
	if d, err := ProcsRuntime(pid, "no process runs with this text"); err == nil {
		t.Errorf("ProcsRuntime of a text no command line holds = %v, no error", d)
	}
	own, err := ProcsRuntime(pid, "")
	if err != nil || own <= 0 {
		t.Errorf("ProcsRuntime(\"\") = %v, %v; want every process's time", own, err)
	}
}
