package sluicetest

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// NetHosts makes namespaces reachable at their own addresses, removes
// them and their links when the test ends, and sweeps those left by a
// process that is gone.
func TestNetHosts(t *testing.T) {
	ip := NeedTool(t, "ip", "iproute2")
	if os.Geteuid() != 0 {
		t.Skip("network namespaces need root")
	}
	// A namespace of a crashed run: its pid is pid_max, which no
	// process has.
	pidMax, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	stale := fmt.Sprintf("%s%s-1", netnsPrefix, strings.TrimSpace(string(pidMax)))
	if out, err := exec.Command(ip, "netns", "add", stale).CombinedOutput(); err != nil {
		t.Skipf("ip netns add: %v: %s", err, out)
	}
	t.Cleanup(func() { removeNetns(ip, stale) })

	var hosts []*NetHost
	// The root ends of the hosts' links, by interface index: another test
	// process may take the same subnet and link names once these are
	// gone, but not the same index.
	rootLinks := map[int]string{}
	t.Run("use", func(t *testing.T) {
		hosts = NetHosts(t, 2)
		if hosts[0].Addr == hosts[1].Addr {
			t.Fatalf("two hosts share %s", hosts[0].Addr)
		}
		ifs, err := net.Interfaces()
		if err != nil {
			t.Fatal(err)
		}
		peers := map[string]bool{}
		for _, h := range hosts {
			peers[h.Peer] = true
		}
		for _, ifc := range ifs {
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				if ipn, ok := a.(*net.IPNet); ok && peers[ipn.IP.String()] {
					rootLinks[ifc.Index] = ipn.IP.String()
				}
			}
		}
		if len(rootLinks) != len(hosts) {
			t.Fatalf("root links found for %v: %v", hosts, rootLinks)
		}
		ln := hosts[1].Listen(t)
		go func() {
			c, err := ln.Accept()
			if err == nil {
				c.Write([]byte(hosts[1].Name))
				c.Close()
			}
		}()
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		buf := make([]byte, 100)
		n, _ := c.Read(buf)
		if string(buf[:n]) != hosts[1].Name {
			t.Fatalf("read %q from %s, want %q", buf[:n], ln.Addr(), hosts[1].Name)
		}
		if _, err := net.Listen("tcp", net.JoinHostPort(hosts[0].Addr, "0")); err == nil {
			t.Fatalf("the root namespace could listen on host 0's address %s", hosts[0].Addr)
		}
	})
	if t.Failed() || len(hosts) == 0 {
		return
	}
	list, _ := exec.Command(ip, "netns", "list").Output()
	for _, h := range append(hosts, &NetHost{Name: stale}) {
		if strings.Contains(string(list), h.Name+" ") || strings.Contains(string(list), h.Name+"\n") {
			t.Errorf("namespace %s left behind:\n%s", h.Name, list)
		}
	}
	for index, peer := range rootLinks {
		if ifc, err := net.InterfaceByIndex(index); err == nil {
			t.Errorf("link %s (index %d) with %s left behind", ifc.Name, index, peer)
		}
	}
}
