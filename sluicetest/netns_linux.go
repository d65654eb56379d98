package sluicetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// netnsPrefix starts the name of every network namespace NetHosts
// creates; the creating process's pid follows it, so a later run can
// tell the leftovers of a crashed run from those of a run still going.
const netnsPrefix = "sluicetest-"

var netnsCounter atomic.Int64

// NetHost is a network namespace standing for another machine: it has its
// own address, Addr, reached from the test's own (root) namespace over a
// veth pair whose root end has the address Peer. Servers listen in it
// with Listen; SetLink takes the machine off the wire and back.
type NetHost struct {
	Name string // the namespace, as ip netns names it
	Addr string // its IPv4 address, in 10.231.0.0/16
	Peer string // the address of the root namespace's end of the link

	ip   string // the path of ip
	link string // the link's name inside the namespace
}

// NetHosts creates n network namespaces, each with its own /24 in
// 10.231.0.0/16 over a veth pair, and removes them (and their links) when
// the test ends, whether it passed or not. It first removes namespaces
// left by earlier runs of NetHosts whose process is gone.
//
// It skips the test, saying why, when the machine does not allow
// namespaces (not root, or ip netns add fails); when ip (iproute2) is
// missing it skips, or fails under CI as NeedTool does.
func NetHosts(t testing.TB, n int) []*NetHost {
	t.Helper()
	ip := NeedTool(t, "ip", "iproute2")
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root (ip netns add); skipping the multi-host test")
	}
	sweepNetns(ip)

	// The subnet is picked and assigned under a lock, so test processes
	// running at once (several packages, several checkouts) never share
	// one.
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "sluicetest-netns.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	defer unix.Flock(int(lock.Fd()), unix.LOCK_UN)

	var hosts []*NetHost
	for range n {
		k, err := freeSubnet()
		if err != nil {
			t.Fatal(err)
		}
		h := &NetHost{
			Name: fmt.Sprintf("%s%d-%d", netnsPrefix, os.Getpid(), netnsCounter.Add(1)),
			Addr: fmt.Sprintf("10.231.%d.2", k),
			Peer: fmt.Sprintf("10.231.%d.1", k),
			ip:   ip,
			link: fmt.Sprintf("slt%dn", k),
		}
		if out, err := exec.Command(ip, "netns", "add", h.Name).CombinedOutput(); err != nil {
			t.Skipf("this machine does not allow network namespaces (ip netns add: %v: %s); skipping the multi-host test",
				err, strings.TrimSpace(string(out)))
		}
		rootLink := fmt.Sprintf("slt%dr", k)
		t.Cleanup(func() {
			// Deleting the link is immediate; a deleted namespace takes
			// its links with it only once the kernel gets round to it.
			exec.Command(ip, "link", "del", rootLink).Run()
			removeNetns(ip, h.Name)
		})
		for _, args := range [][]string{
			{"link", "add", rootLink, "type", "veth", "peer", "name", h.link},
			{"link", "set", h.link, "netns", h.Name},
			{"addr", "add", h.Peer + "/24", "dev", rootLink},
			{"link", "set", rootLink, "up"},
			{"-n", h.Name, "addr", "add", h.Addr + "/24", "dev", h.link},
			{"-n", h.Name, "link", "set", h.link, "up"},
			{"-n", h.Name, "link", "set", "lo", "up"},
		} {
			if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
				t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
			}
		}
		hosts = append(hosts, h)
	}
	return hosts
}

// freeSubnet returns a k such that no link in the root namespace has an
// address in 10.231.k.0/24.
func freeSubnet() (int, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return 0, err
	}
	used := map[int]bool{}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok {
			if v4 := ipn.IP.To4(); v4 != nil && v4[0] == 10 && v4[1] == 231 {
				used[int(v4[2])] = true
			}
		}
	}
	for k := 1; k < 255; k++ {
		if !used[k] {
			return k, nil
		}
	}
	return 0, fmt.Errorf("no free /24 left in 10.231.0.0/16")
}

// sweepNetns removes the namespaces NetHosts made in processes that are
// no longer running.
func sweepNetns(ip string) {
	out, err := exec.Command(ip, "netns", "list").Output()
	if err != nil {
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pid, _, _ := strings.Cut(rest, "-")
		if n, err := strconv.Atoi(pid); err == nil && n != os.Getpid() {
			if _, err := os.Stat("/proc/" + pid); os.IsNotExist(err) {
				removeNetns(ip, name)
			}
		}
	}
}

// removeNetns deletes the namespace name; its veth pair goes with it
// (once the kernel has torn the namespace down).
func removeNetns(ip, name string) {
	exec.Command(ip, "netns", "delete", name).Run()
}

// Listen opens a TCP listener on h.Addr (port chosen by the system)
// inside the namespace, closed when the test ends. The listener and the
// connections it accepts stay in the namespace whatever goroutine serves
// them, so an ordinary server in the test process answers as this host.
func (h *NetHost) Listen(t testing.TB) net.Listener {
	t.Helper()
	type result struct {
		ln  net.Listener
		err error
	}
	done := make(chan result, 1)
	go func() {
		// The thread enters the namespace only to make the socket. If
		// it cannot come back, it stays locked, and Go ends it with the
		// goroutine instead of reusing it.
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", h.Name))
		if err != nil {
			done <- result{nil, err}
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- result{nil, fmt.Errorf("setns %s: %w", h.Name, err)}
			return
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(h.Addr, "0"))
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- result{ln, err}
	}()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	t.Cleanup(func() { r.ln.Close() })
	return r.ln
}

// SetLink brings the namespace's end of its link down or up. Down, the
// host is gone from the wire as a machine that lost power or network:
// nothing it had open answers, and nothing refuses a connection to it;
// packets to it are dropped unanswered. Up again, it answers as before.
func (h *NetHost) SetLink(t testing.TB, up bool) {
	t.Helper()
	state := "down"
	if up {
		state = "up"
	}
	if out, err := exec.Command(h.ip, "-n", h.Name, "link", "set", h.link, state).CombinedOutput(); err != nil {
		t.Fatalf("ip -n %s link set %s %s: %v: %s", h.Name, h.link, state, err, out)
	}
}
