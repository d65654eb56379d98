//go:build !linux

package engine

import (
	"context"
	"errors"
	"net"
)

func listenTCP(network, addr string, shared bool) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	if shared {
		return nil, errors.New("engine: ListenShared: SO_REUSEPORT is supported on Linux only")
	}
	return lc.Listen(context.Background(), network, addr)
}

func defaultMaxConns() int { return DefaultMaxConns }
