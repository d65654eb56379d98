//go:build !linux

package sock

import (
	"context"
	"errors"
	"net"
)

func listenTCP(network, addr string, shared bool) (net.Listener, error) {
	lc := net.ListenConfig{KeepAlive: -1}
	if shared {
		return nil, errors.New("sock: ListenShared: SO_REUSEPORT is supported on Linux only")
	}
	return lc.Listen(context.Background(), network, addr)
}
