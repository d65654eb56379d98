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
	ChunkDone                       // after the trailer section's empty line: the body ended
)

// MaxChunkLine bounds a chunk-size line with its extensions, as the engine
// and the upstream client read one: a reader whose unread bytes reach it
// while Frame still returns ErrIncomplete on a chunk-size line refuses the
// body.
const MaxChunkLine = 4 << 10

// ChunkedDecoder is the state machine of the chunked transfer coding
// (RFC 9112 §7.1) and the reader of its trailer section, shared by the
// engine's request bodies and the upstream client's response bodies. It
// does no I/O: the caller owns the read buffer, hands Frame its unread
// bytes when State is ChunkSizeLine or ChunkDataEnd, reads up to Left
// data bytes itself in ChunkData (from its buffer or straight from the
// socket) and reports them to Consumed, and hands Trailer its unread
// bytes in ChunkTrailer, one field line at a time, until ChunkDone. The
// zero value is ready for a body's first chunk. A decoder is not safe
// for concurrent use.
type ChunkedDecoder struct {
	State ChunkState
	Left  int64 // data bytes left in the current chunk, in ChunkData

	trailerBytes  int // of the trailer section so far, with line ends
	trailerFields int // field lines in it so far
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

// Trailer consumes the line at the start of buf in state ChunkTrailer: a
// trailer field line, whose name and value it returns (views into buf,
// checked as a header field's are: SplitFieldLine), or the empty line
// that ends the section, for which name is nil and State becomes
// ChunkDone. n is how many bytes of buf it consumed.
//
// The section may hold at most maxBytes bytes, line ends counted, and
// maxFields field lines: beyond either, or when buf holds maxBytes bytes
// or more without a whole line, it returns ErrSectionTooLarge. A line
// that starts with whitespace is ErrObsFold (RFC 9112 §5.2), one that is
// not a valid field line ErrTrailerField; the framing errors are
// ChunkedLine's, and ErrIncomplete asks for more bytes (call again with
// the same ones and more). It only reads buf and does not allocate: a
// caller that keeps the field copies it.
func (d *ChunkedDecoder) Trailer(buf []byte, maxBytes, maxFields int) (name, value []byte, n int, err error) {
	line, n, err := ChunkedLine(buf)
	switch {
	case err == ErrIncomplete && len(buf) >= maxBytes:
		return nil, nil, 0, ErrSectionTooLarge
	case err != nil:
		return nil, nil, n, err
	case len(line) == 0:
		d.State = ChunkDone
		return nil, nil, n, nil
	}
	d.trailerBytes += len(line) + 2
	if d.trailerBytes > maxBytes || d.trailerFields >= maxFields {
		return nil, nil, n, ErrSectionTooLarge
	}
	if line[0] == ' ' || line[0] == '\t' {
		return nil, nil, n, ErrObsFold
	}
	name, value, err = SplitFieldLine(line)
	if err != nil {
		return nil, nil, n, ErrTrailerField
	}
	d.trailerFields++
	return name, value, n, nil
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
