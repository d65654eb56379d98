//go:build !linux

package engine

import (
	"errors"
	"os"
)

// Outside Linux the engine writes through the net.Conn: the pending
// output with Write, the output and large body writes with net.Buffers (one writev(2)
// where the platform has it), and a file by reading it into the output
// buffer, a buffer at a time (copyFile). Nothing is held back to share a
// packet with what follows (Linux's MSG_MORE), and no file is sent with
// sendfile(2) by the engine itself.

// rawSend is false: the engine does not write to descriptors with its own
// system calls here, so transmit and sendFile are never called.
const rawSend = false

var errNoRawSend = errors.New("engine: raw sends are Linux's")

// fileTransfer is the state of Linux's transmit; sessions hold an empty
// one here.
type fileTransfer struct{}

func (*fileTransfer) step(uintptr) bool { return true }

func (c *conn) transmit([][]byte, *os.File, int64, int64, int) error { return errNoRawSend }

func (c *conn) sendFile(*os.File, int64, int64) error { return errNoRawSend }

// flushBeforeClose writes the pending output of a connection that closes
// next.
func (c *conn) flushBeforeClose() error { return c.flush() }
