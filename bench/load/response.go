package load

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strconv"

	"github.com/sluice-server/sluice/httpgrammar"
)

// errBadResponse reports a response this reader cannot frame.
var errBadResponse = errors.New("load: malformed response")

// response is what readResponse learned about one response.
type response struct {
	status int
	close  bool  // the server will close the connection after it
	bytes  int64 // head and body as received
}

// readResponse reads one response from br, discarding its body. head is
// true if the request was HEAD (no body follows). It allocates nothing for
// a well-formed response.
func readResponse(br *bufio.Reader, head bool) (response, error) {
	var r response
	line, err := br.ReadSlice('\n')
	if err != nil {
		return r, err
	}
	r.bytes += int64(len(line))
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return r, errBadResponse
	}
	for _, c := range line[9:12] {
		if c < '0' || c > '9' {
			return r, errBadResponse
		}
		r.status = r.status*10 + int(c-'0')
	}
	r.close = line[7] == '0' // HTTP/1.0 closes unless told otherwise
	length, chunked := int64(-1), false
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			return r, err
		}
		r.bytes += int64(len(line))
		if len(line) <= 2 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return r, errBadResponse
		}
		value = bytes.TrimSpace(value)
		switch {
		case httpgrammar.EqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64) // no allocation: the conversion does not escape
			if err != nil || n < 0 {
				return r, errBadResponse
			}
			length = n
		case httpgrammar.EqualFold(name, "transfer-encoding"):
			chunked = httpgrammar.EqualFold(value, "chunked")
		case httpgrammar.EqualFold(name, "connection"):
			if httpgrammar.EqualFold(value, "close") {
				r.close = true
			} else if httpgrammar.EqualFold(value, "keep-alive") {
				r.close = false
			}
		}
	}
	switch {
	case head || r.status/100 == 1 || r.status == 204 || r.status == 304:
		return r, nil
	case chunked:
		n, err := discardChunked(br)
		r.bytes += n
		return r, err
	case length >= 0:
		n, err := br.Discard(int(length))
		r.bytes += int64(n)
		if err == io.EOF && int64(n) < length {
			err = io.ErrUnexpectedEOF
		}
		return r, err
	default: // delimited by close
		n, err := io.Copy(io.Discard, br)
		r.bytes += n
		r.close = true
		return r, err
	}
}

// discardChunked reads a chunked body and its trailer.
func discardChunked(br *bufio.Reader) (int64, error) {
	var total int64
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return total, err
		}
		total += int64(len(line))
		size, _, _ := bytes.Cut(bytes.TrimSpace(line), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 64)
		if err != nil || n < 0 {
			return total, errBadResponse
		}
		if n == 0 {
			for { // trailer fields, then the empty line
				line, err := br.ReadSlice('\n')
				if err != nil {
					return total, err
				}
				total += int64(len(line))
				if len(line) <= 2 {
					return total, nil
				}
			}
		}
		d, err := br.Discard(int(n) + 2) // data and CRLF
		total += int64(d)
		if err != nil {
			return total, err
		}
	}
}
