//go:build !linux

package admin

import "net"

// peerOf names the process at the other end of c: only Linux says here.
func peerOf(*net.UnixConn) string { return "unix-peer" }
