//go:build !unix

package fastcgi

import "net"

// rawConn is the portable stand-in for the Unix one: plain writes and
// reads, no peek (an idle connection is taken as clean) and no
// non-blocking read (every read of the response flushes the client
// first).
type rawConn struct {
	nc   net.Conn
	sent int
}

func (r *rawConn) bind(nc net.Conn) { r.nc = nc }

func (r *rawConn) writeThenRead(b, p []byte) (int, error) {
	n, err := r.nc.Write(b)
	if r.sent = n; err != nil {
		return 0, err
	}
	return r.nc.Read(p)
}

func (r *rawConn) nothingSent() bool { return r.sent == 0 }

func (r *rawConn) read(p []byte) (int, error) { return r.nc.Read(p) }

func (r *rawConn) peekClean() bool { return true }

func (r *rawConn) peeksAtSend() bool { return false }

func (r *rawConn) tryRead([]byte) (int, bool, error) { return 0, false, nil }
