//go:build !linux

package engine

import "syscall"

func controlReusePort(network, address string, c syscall.RawConn) error { return nil }

func defaultMaxConns() int { return DefaultMaxConns }
