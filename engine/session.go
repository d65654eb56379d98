package engine

import "sync"

// Buffer sizes of a session. A request head larger than readBufSize is read
// into a larger buffer (up to Limits.MaxHeaderBytes) that is dropped, not
// pooled, afterwards.
const (
	readBufSize  = 4 << 10
	writeBufSize = 8 << 10
	bodyBufSize  = 4 << 10
)

// session is everything a connection needs only while a request is in
// flight. Connections borrow one from sessionPool when bytes arrive and
// return it when they go idle, so an idle keep-alive connection holds no
// buffers at all.
type session struct {
	_ noCopy

	rbuf    []byte // pooled read buffer
	out     []byte // pending output, cap writeBufSize
	bodyBuf []byte // body written before the header is committed
	pathBuf []byte // percent-decoded path
	iov     [][]byte

	req  Request
	resp response
	body bodyReader

	transfer   fileTransfer // a sendfile in progress (see conn.sendFile)
	transferFn func(fd uintptr) bool
}

var sessionPool = sync.Pool{New: func() any {
	s := &session{
		rbuf:    make([]byte, readBufSize),
		out:     make([]byte, 0, writeBufSize),
		bodyBuf: make([]byte, 0, bodyBufSize),
		iov:     make([][]byte, 0, 3),
	}
	s.req.Fields = make([]Field, 0, 16)
	s.transferFn = s.transfer.step
	return s
}}

func acquireSession() *session { return sessionPool.Get().(*session) }

func releaseSession(s *session) {
	s.reset()
	sessionPool.Put(s)
}

// reset readies s for the next request on its connection.
func (s *session) reset() {
	s.req.reset()
	s.resp.reset()
	s.body = bodyReader{}
	s.out = s.out[:0]
	s.bodyBuf = s.bodyBuf[:0]
	clear(s.iov[:cap(s.iov)])
	s.iov = s.iov[:0]
}

// noCopy makes `go vet` report copies of a struct that embeds it.
type noCopy struct{}

func (*noCopy) Lock()   {}
func (*noCopy) Unlock() {}
