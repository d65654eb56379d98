package machine

import (
	"net"
	"strconv"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestFreePort(t *testing.T) {
	port, err := FreePort()
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d is not free: %v", port, err)
	}
	ln.Close()
	// A wildcard bind, as servers such as Caddy make, must succeed too.
	ln, err = net.Listen("tcp", ":"+strconv.Itoa(port))
	if err != nil {
		t.Fatalf("port %d is not free on every address: %v", port, err)
	}
	ln.Close()
}

func TestRaiseNofile(t *testing.T) {
	n := RaiseNofile()
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Cur != rl.Max || n != int(min(rl.Cur, 1<<20)) {
		t.Fatalf("RaiseNofile = %d, limit %d of %d", n, rl.Cur, rl.Max)
	}
}

func TestPin(t *testing.T) {
	var before unix.CPUSet
	if err := unix.SchedGetaffinity(0, &before); err != nil {
		t.Fatal(err)
	}
	defer Pin(cpusOf(before)...)
	cpus := cpusOf(before)
	Pin(cpus[0])
	var after unix.CPUSet
	unix.SchedGetaffinity(0, &after)
	if after.Count() != 1 || !after.IsSet(cpus[0]) {
		t.Fatalf("after Pin(%d) the thread may run on %d CPUs", cpus[0], after.Count())
	}
}

func cpusOf(set unix.CPUSet) []int {
	var cpus []int
	for c := range 1024 {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
