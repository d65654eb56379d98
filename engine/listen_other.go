//go:build !linux

package engine

import (
	"context"
	"net"
	"syscall"
)

func listenTCP(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: controlReusePort, KeepAlive: -1}
	return lc.Listen(context.Background(), network, addr)
}

func controlReusePort(network, address string, c syscall.RawConn) error { return nil }

func defaultMaxConns() int { return DefaultMaxConns }
