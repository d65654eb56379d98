//go:build unix

package fpmtest_test

import (
	"net"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/fastcgi/fpmtest"
)

func TestStart(t *testing.T) {
	for _, tcp := range []bool{false, true} {
		f := fpmtest.Start(t, fpmtest.Options{Children: 2, TCP: tcp})
		network, addr := "tcp", f.Addr()
		if a, ok := strings.CutPrefix(addr, "unix:"); ok {
			network, addr = "unix", a
		}
		if tcp != (network == "tcp") {
			t.Fatalf("TCP %v: Addr %q", tcp, f.Addr())
		}
		c, err := net.Dial(network, addr)
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		f.Kill()
		if _, err := net.Dial(network, addr); err == nil {
			t.Fatalf("%s still accepts connections after Kill", f.Addr())
		}
	}
}
