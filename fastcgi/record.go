package fastcgi

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Record types and constants of FastCGI 1.0 (the specification's
// section 8).
const (
	version1 = 1

	typeBeginRequest    = 1
	typeAbortRequest    = 2
	typeEndRequest      = 3
	typeParams          = 4
	typeStdin           = 5
	typeStdout          = 6
	typeStderr          = 7
	typeData            = 8
	typeGetValues       = 9
	typeGetValuesResult = 10
	typeUnknownType     = 11

	roleResponder = 1
	flagKeepConn  = 1

	headerLen  = 8
	maxContent = 65535

	// requestID is the one request id a connection carries: requests
	// are not multiplexed (PHP-FPM does not), one at a time each.
	requestID = 1
)

// protocolStatus values of END_REQUEST.
const (
	statusRequestComplete = 0
	statusCantMpxConn     = 1
	statusOverloaded      = 2
	statusUnknownRole     = 3
)

// appendHeader appends a record header.
func appendHeader(b []byte, typ byte, contentLen int) []byte {
	return append(b, version1, typ, 0, requestID, byte(contentLen>>8), byte(contentLen), 0, 0)
}

// appendBeginRequest appends the BEGIN_REQUEST record of a responder
// request that keeps the connection open.
func appendBeginRequest(b []byte) []byte {
	b = appendHeader(b, typeBeginRequest, 8)
	return append(b, 0, roleResponder, flagKeepConn, 0, 0, 0, 0, 0)
}

// appendLength appends a name-value pair's length: one byte below 128,
// else four with the top bit set.
func appendLength(b []byte, n int) []byte {
	if n < 128 {
		return append(b, byte(n))
	}
	return binary.BigEndian.AppendUint32(b, uint32(n)|1<<31)
}

// appendPair appends a name-value pair of a PARAMS stream.
func appendPair[V string | []byte](b []byte, name string, value V) []byte {
	b = appendLength(b, len(name))
	b = appendLength(b, len(value))
	b = append(b, name...)
	return append(b, value...)
}

// appendStream appends content as records of type typ, each at most
// maxContent bytes; nothing for empty content (the empty record that
// ends a stream is appended apart).
func appendStream(b []byte, typ byte, content []byte) []byte {
	for len(content) > 0 {
		n := min(len(content), maxContent)
		b = appendHeader(b, typ, n)
		b = append(b, content[:n]...)
		content = content[n:]
	}
	return b
}

// event is what recordReader.next found.
type event int

const (
	evNone   event = iota // bytes consumed, nothing to report
	evStdout              // data is STDOUT content
	evStderr              // data is STDERR content
	evEnd                 // END_REQUEST read, with its padding
)

// errProtocol is wrapped by the errors of a server that broke the
// protocol.
var errProtocol = errors.New("fastcgi: protocol error")

// recordReader reads the records a server sends for one request, bytes
// at a time as they arrive, without copying content (STDOUT and STDERR
// content is handed out as views of the input) and without allocating.
// It is strict: a version other than 1, a record for another request, a
// record type a server never sends to a client (BEGIN_REQUEST, PARAMS,
// STDIN…) or an END_REQUEST of the wrong length is an error, and
// anything after END_REQUEST is the caller's to refuse. Management
// records (request id 0: GET_VALUES_RESULT, UNKNOWN_TYPE, or types this
// client does not know) are skipped, as the specification lets a client
// do. The zero value is ready for a request.
type recordReader struct {
	hdr [headerLen]byte
	nh  int // bytes of hdr read

	typ  byte // of the record whose content is being read
	left int  // content bytes left
	pad  int  // padding bytes left

	end  [8]byte // END_REQUEST's body
	ne   int
	done bool // END_REQUEST read

	appStatus      uint32
	protocolStatus byte
}

// next consumes bytes of b and returns how many, with what they held:
// evStdout or evStderr and the content (a view of b), evEnd once
// END_REQUEST and its padding are read, or evNone when all of b was
// consumed with nothing to report (a header, padding, a skipped record,
// an empty STDOUT record). A caller loops over b until it is consumed.
// After evEnd, next consumes nothing: bytes left over are the caller's
// to judge.
func (rr *recordReader) next(b []byte) (n int, ev event, data []byte, err error) {
	for n < len(b) && !rr.done {
		switch {
		case rr.left > 0:
			k := min(rr.left, len(b)-n)
			rr.left -= k
			switch rr.typ {
			case typeStdout:
				return n + k, evStdout, b[n : n+k], nil
			case typeStderr:
				return n + k, evStderr, b[n : n+k], nil
			case typeEndRequest:
				rr.ne += copy(rr.end[rr.ne:], b[n:n+k])
				n += k
				if rr.left == 0 {
					rr.appStatus = binary.BigEndian.Uint32(rr.end[:4])
					rr.protocolStatus = rr.end[4]
					if rr.pad == 0 {
						rr.done = true
						return n, evEnd, nil, nil
					}
				}
			default: // skipped
				n += k
			}
		case rr.pad > 0:
			k := min(rr.pad, len(b)-n)
			rr.pad -= k
			n += k
			if rr.pad == 0 && rr.typ == typeEndRequest {
				rr.done = true
				return n, evEnd, nil, nil
			}
		default: // a header
			k := copy(rr.hdr[rr.nh:], b[n:])
			rr.nh += k
			n += k
			if rr.nh < headerLen {
				return n, evNone, nil, nil
			}
			rr.nh = 0
			if err := rr.header(); err != nil {
				return n, evNone, nil, err
			}
		}
	}
	return n, evNone, nil, nil
}

// header checks the record header in rr.hdr and readies its content.
func (rr *recordReader) header() error {
	h := &rr.hdr
	typ := h[1]
	id := binary.BigEndian.Uint16(h[2:4])
	rr.left = int(binary.BigEndian.Uint16(h[4:6]))
	rr.pad = int(h[6])
	rr.typ = typ
	if h[0] != version1 {
		return fmt.Errorf("%w: version %d", errProtocol, h[0])
	}
	if id == 0 {
		switch typ {
		case typeGetValuesResult, typeUnknownType:
			rr.typ = 0 // skipped
			return nil
		case typeBeginRequest, typeAbortRequest, typeEndRequest, typeParams, typeStdin,
			typeStdout, typeStderr, typeData, typeGetValues:
			return fmt.Errorf("%w: record type %d for request 0", errProtocol, typ)
		}
		rr.typ = 0 // a management record of a later version: skipped
		return nil
	}
	if id != requestID {
		return fmt.Errorf("%w: record for request %d", errProtocol, id)
	}
	switch typ {
	case typeStdout, typeStderr:
		return nil
	case typeEndRequest:
		if rr.left != 8 {
			return fmt.Errorf("%w: END_REQUEST of %d bytes", errProtocol, rr.left)
		}
		rr.ne = 0
		return nil
	}
	return fmt.Errorf("%w: record type %d from the server", errProtocol, typ)
}
