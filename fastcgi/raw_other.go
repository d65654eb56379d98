//go:build !unix

package fastcgi

import "net"

// rawConn is the portable stand-in for the Unix one: no peek (an idle
// connection is taken as clean) and no non-blocking read (every read of
// the response flushes the client first).
type rawConn struct{}

func (r *rawConn) bind(net.Conn) {}

func (r *rawConn) peekClean() bool { return true }

func (r *rawConn) tryRead([]byte) (int, bool, error) { return 0, false, nil }
