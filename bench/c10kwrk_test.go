package bench

import (
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/report"
)

// TestRaiseNofileReachesChildren: Go raises its own soft descriptor
// limit at start but gives children the limit it started with; after
// raiseNofile, the programs the harness starts (wrk at 10,000
// connections, the servers) get the raised one. The test starts itself
// again with a soft limit of 1,024, as a shell might, and asks a shell
// started after raiseNofile for its limit.
func TestRaiseNofileReachesChildren(t *testing.T) {
	if os.Getenv("SLUICEBENCH_NOFILE_CHILD") == "1" {
		n := machine.RaiseNofile()
		out, err := exec.Command("sh", "-c", "ulimit -Sn").Output()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("raised " + strconv.Itoa(n) + " child " + strings.TrimSpace(string(out)) + "\n")
		return
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 10300 {
		t.Skipf("the hard descriptor limit is %d: too low to tell 1,024 from a C10K limit", rl.Max)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("prlimit", "--nofile=1024:"+strconv.FormatUint(rl.Max, 10), exe, "-test.run=^TestRaiseNofileReachesChildren$", "-test.v")
	cmd.Env = append(os.Environ(), "SLUICEBENCH_NOFILE_CHILD=1")
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "raised " + strconv.FormatUint(min(rl.Max, 1<<20), 10) + " child " + strconv.FormatUint(rl.Max, 10)
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("output %q, want a line %q", out, want)
	}
}

// TestC10KWrkScenario: c10k-wrk is a scenario of the default run, at
// --conns connections (2,000 with --quick), on the 151-byte page and the
// 80 KB file the docroot holds.
func TestC10KWrkScenario(t *testing.T) {
	if !slices.Contains(defaultScenarios, report.C10KWrk) {
		t.Errorf("default scenarios %q lack %s", defaultScenarios, report.C10KWrk)
	}
	root := t.TempDir()
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	for _, pg := range c10kPages {
		name := "index.html"
		if pg.path != pathIndex {
			name = strings.TrimPrefix(pg.path, "/")
		}
		fi, err := os.Stat(root + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(pg.size) {
			t.Errorf("%s: %d bytes, want %d", pg.path, fi.Size(), pg.size)
		}
	}
	if c10kPages[1].size != 81920 {
		t.Errorf("the large page is %d bytes, want 81,920 (80 KB)", c10kPages[1].size)
	}
	o, code := parse([]string{"--quick"}, io.Discard)
	if code != -1 || !slices.Contains(o.scenarios, report.C10KWrk) || o.maxConns != 2000 {
		t.Errorf("--quick: exit %d, scenarios %q, conns %d", code, o.scenarios, o.maxConns)
	}
}

// TestServerConns: the connections a server holds are counted until it
// closes them, whoever closed first, and the client's side is not.
func TestServerConns(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	var clients, servers []net.Conn
	for range 3 {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		clients, servers = append(clients, c), append(servers, s)
	}
	count := func() int {
		n, err := serverConns(port)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 3 {
		t.Fatalf("3 connections open: counted %d", n)
	}
	// The clients close: the server's sockets wait in CLOSE_WAIT, held.
	for _, c := range clients {
		c.Close()
	}
	if n := count(); n != 3 {
		t.Errorf("the clients closed, the server not: counted %d, want 3", n)
	}
	for _, s := range servers {
		s.Close()
	}
	deadline := time.Now().Add(10 * time.Second)
	for count() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("both sides closed: still %d counted after 10 s", count())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestCountConns(t *testing.T) {
	table := `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:A5C1 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 1 1 0 100 0 0 10 0
   1: 0100007F:A5C1 0100007F:D2F0 01 00000000:00000000 00:00000000 00000000  1000        0 2 1 0 20 4 30 10 -1
   2: 0100007F:A5C1 0100007F:D2F2 08 00000000:00000000 00:00000000 00000000  1000        0 3 1 0 20 4 30 10 -1
   3: 0100007F:A5C1 0100007F:D2F4 06 00000000:00000000 03:00000F9E 00000000     0        0 0 3 0
   4: 0100007F:D2F0 0100007F:A5C1 01 00000000:00000000 00:00000000 00000000  1000        0 4 1 0 20 4 30 10 -1
   5: 0100007F:A5C2 0100007F:D2F6 01 00000000:00000000 00:00000000 00000000  1000        0 5 1 0 20 4 30 10 -1
`
	if n := countConns(table, 0xA5C1); n != 2 {
		t.Errorf("counted %d, want 2 (ESTABLISHED and CLOSE_WAIT on the port; not LISTEN, TIME_WAIT, the client's side or another port)", n)
	}
}
