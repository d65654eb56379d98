package httpgrammar

import "bytes"

// ChunkState is where a ChunkedDecoder stands in a chunked body.
type ChunkState uint8

// The states of a chunked body (RFC 9112 §7.1), in the order they come.
const (
	ChunkSizeLine ChunkState = iota // before a chunk-size line
	ChunkData                       // in a chunk's data: Left bytes to go
	ChunkDataEnd                    // before the CRLF that ends a chunk's data
	ChunkTrailer                    // after the last chunk: the trailer section
)

// ChunkedDecoder is the state machine of the chunked transfer coding
// (RFC 9112 §7.1), shared by the engine's request bodies and the proxy's
// upstream response bodies. It does no I/O: the caller owns the read
// buffer, hands Frame its unread bytes when State is ChunkSizeLine or
// ChunkDataEnd, reads up to Left data bytes itself in ChunkData (from
// its buffer or straight from the socket) and reports them to Consumed,
// and reads the trailer section itself in ChunkTrailer (see
// ChunkedLine). The zero value is ready for a body's first chunk. A
// decoder is not safe for concurrent use.
type ChunkedDecoder struct {
	State ChunkState
	Left  int64 // data bytes left in the current chunk, in ChunkData
}

// Frame consumes the framing at the start of buf: the chunk-size line
// (moving to ChunkData, or to ChunkTrailer after the last chunk) or the
// CRLF after a chunk's data (moving to ChunkSizeLine). It returns how
// many bytes of buf it consumed, and ErrIncomplete when buf ends first
// (read more and call again with the same bytes; the caller bounds the
// chunk line), or the error of ChunkedLine, ParseChunkLine or
// ErrChunkEnd. It only reads buf and does not allocate.
func (d *ChunkedDecoder) Frame(buf []byte) (int, error) {
	if d.State == ChunkDataEnd {
		if len(buf) < 2 {
			return 0, ErrIncomplete
		}
		if buf[0] != '\r' || buf[1] != '\n' {
			return 0, ErrChunkEnd
		}
		d.State = ChunkSizeLine
		return 2, nil
	}
	line, n, err := ChunkedLine(buf)
	if err != nil {
		return n, err
	}
	size, err := ParseChunkLine(line)
	if err != nil {
		return n, err
	}
	if size == 0 {
		d.State = ChunkTrailer
	} else {
		d.State, d.Left = ChunkData, size
	}
	return n, nil
}

// Consumed records n data bytes of the current chunk read by the caller
// (at most Left), moving to ChunkDataEnd after the last.
func (d *ChunkedDecoder) Consumed(n int) {
	d.Left -= int64(n)
	if d.Left == 0 {
		d.State = ChunkDataEnd
	}
}

// ChunkedLine returns the line at the start of buf, a chunk-size line or
// a trailer field line, without its CRLF, and the length n of the line
// with it. Framing lines of a chunked body must end in CRLF: a line
// ended by a bare LF is ErrChunkBareLF, a CR inside it ErrBareCR (n is
// still the line's length). It returns ErrIncomplete when buf holds no
// LF. line is a view into buf, which ChunkedLine only reads.
func ChunkedLine(buf []byte) (line []byte, n int, err error) {
	i := bytes.IndexByte(buf, '\n')
	if i < 0 {
		return nil, 0, ErrIncomplete
	}
	if i == 0 || buf[i-1] != '\r' {
		return nil, i + 1, ErrChunkBareLF
	}
	line = buf[:i-1]
	if bytes.IndexByte(line, '\r') >= 0 {
		return nil, i + 1, ErrBareCR
	}
	return line, i + 1, nil
}
