//go:build !linux

package daemon

import (
	"net"

	"github.com/sluice-server/sluice/config"
)

// SocketActivation returns nil: socket activation is systemd's, which
// runs on Linux.
func SocketActivation() (*Activation, error) { return nil, nil }

// Listen opens a listener for addr with the package's Listen: no sockets
// are passed elsewhere than on Linux.
func (a *Activation) Listen(addr config.Address) (net.Listener, error) { return Listen(addr) }
