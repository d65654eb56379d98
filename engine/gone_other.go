//go:build !linux

package engine

// Outside Linux sockets are not watched: only the server giving up on a
// connection closes its Gone channel.

// peerWatch is a no-op.
type peerWatch struct{}

func (*peerWatch) start(*conn, *goneWatch) bool { return false }

func (*peerWatch) leave() {}

func (*peerWatch) closed() {}
