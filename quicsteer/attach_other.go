//go:build !linux

package quicsteer

import (
	"errors"
	"syscall"
)

// Attach reports that steering needs Linux (SO_ATTACH_REUSEPORT_CBPF).
func Attach(syscall.RawConn, Table) error {
	return &AttachError{Err: errors.New("steering by connection ID needs Linux")}
}
