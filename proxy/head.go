package proxy

import (
	"bytes"
	"errors"

	"github.com/sluice-server/sluice/httpgrammar"
)

// field is one header or trailer field line of an upstream response:
// views into the upstream connection's read buffer.
type field struct{ name, value []byte }

// responseHead is an upstream response's status line and header section,
// parsed by parseResponseHead. Its slices are views into the read buffer
// of the connection it came from, valid until the next read.
type responseHead struct {
	protoMinor int
	status     int
	reason     []byte
	fields     []field

	// Framing (RFC 9112 §6.3), as the head declares it; the request's
	// method and the status decide whether there is a body at all (see
	// bodyMode).
	contentLength int64 // -1 when not given
	chunked       bool
	close         bool // Connection: close, or HTTP/1.0 without keep-alive
}

// reset clears h for reuse, keeping the capacity of fields.
func (h *responseHead) reset() {
	*h = responseHead{fields: h.fields[:0], contentLength: -1}
}

// BadResponseError is an upstream response refused as malformed or
// ambiguous: the client is answered 502 and the upstream connection is
// closed. Rule says what was wrong.
type BadResponseError struct{ Rule string }

func (e *BadResponseError) Error() string { return "proxy: bad upstream response: " + e.Rule }

func badResponse(rule string) *BadResponseError { return &BadResponseError{Rule: rule} }

// The refusals of parseResponseHead beyond httpgrammar's.
var (
	errStatusLine    = badResponse("malformed status line")                     // RFC 9112 §4
	errVersion       = badResponse("not an HTTP/1.x response")                  // RFC 9112 §2.3
	errMixedEOL      = badResponse("bare LF and CRLF line ends mixed")          // RFC 9112 §2.2, §11.2
	errObsFold       = badResponse("obsolete line folding")                     // RFC 9112 §5.2
	errHeadTooLarge  = badResponse("header section too large")                  // a limit
	errTooManyFields = badResponse("too many header fields")                    // a limit
	errContentLength = badResponse("malformed Content-Length")                  // RFC 9110 §8.6
	errDupLength     = badResponse("conflicting Content-Length values")         // RFC 9112 §6.3
	errCLAndTE       = badResponse("both Content-Length and Transfer-Encoding") // RFC 9112 §6.3
	errTEHTTP10      = badResponse("Transfer-Encoding in an HTTP/1.0 response") // RFC 9112 §6.1
	errChunkEnd      = badResponse("chunk data not followed by CRLF")           // RFC 9112 §7.1
	errChunkLine     = badResponse("chunk line too long")                       // a limit
	errChunkBareLF   = badResponse("chunked framing line not ended by CRLF")    // RFC 9112 §7.1
	errTrailer       = badResponse("malformed trailer section")                 // RFC 9112 §7.1.2
)

// grammarError turns an httpgrammar.SyntaxError into a refusal.
func grammarError(err error) error {
	var se httpgrammar.SyntaxError
	if errors.As(err, &se) {
		return badResponse(se.Error())
	}
	return err
}

// scanError turns an error of httpgrammar.NextField into errNeedMore
// or a refusal.
func scanError(err error) error {
	switch err {
	case httpgrammar.ErrIncomplete:
		return errNeedMore
	case httpgrammar.ErrSectionTooLarge:
		return errHeadTooLarge
	case httpgrammar.ErrMixedEOL:
		return errMixedEOL
	case httpgrammar.ErrObsFold:
		return errObsFold
	}
	return grammarError(err)
}

// errNeedMore reports that the buffer ends before the response head does.
var errNeedMore = errors.New("proxy: incomplete response head")

// parseResponseHead parses one response head at the start of buf into h
// (reset first), as strictly as the engine parses a request head: the
// same line scanner (httpgrammar.NextField) and field-line rules
// (httpgrammar.SplitFieldLine): line ends all CRLF or all bare LF, no
// obs-fold, no bare CR, at most maxBytes bytes and
// maxFields fields; Content-Length and Transfer-Encoding judged as RFC
// 9112 §6.3 says a message must be framed, every ambiguity refused. It
// returns the length of the head, errNeedMore when buf ends before it
// does, or a *BadResponseError. It does not allocate beyond h.fields.
func parseResponseHead(buf []byte, h *responseHead, maxBytes, maxFields int) (int, error) {
	h.reset()
	lf := bytes.IndexByte(buf, '\n')
	if lf < 0 {
		if len(buf) >= maxBytes {
			return 0, errHeadTooLarge
		}
		if i := bytes.IndexByte(buf, '\r'); i >= 0 && i < len(buf)-1 {
			return 0, grammarError(httpgrammar.ErrBareCR)
		}
		return 0, errNeedMore
	}
	line := buf[:lf]
	pos := lf + 1
	crlf := len(line) > 0 && line[len(line)-1] == '\r'
	if crlf {
		line = line[:len(line)-1]
	}
	if err := parseStatusLine(line, h); err != nil {
		return 0, err
	}
	var (
		clSeen, teSeen bool
		te             httpgrammar.TransferCodings
		connClose      bool
		connKeep       bool
	)
	if pos > maxBytes {
		return 0, errHeadTooLarge
	}
	for {
		// The engine's line scanner: the same refusals of bare CR,
		// obs-fold and mixed line ends, the same bound.
		name, value, next, err := httpgrammar.NextField(buf, pos, maxBytes, crlf)
		if err != nil {
			return 0, scanError(err)
		}
		pos = next
		if name == nil {
			break
		}
		if len(h.fields) >= maxFields {
			return 0, errTooManyFields
		}
		h.fields = append(h.fields, field{name, value})
		switch len(name) {
		case 10:
			if httpgrammar.EqualFold(name, "connection") {
				for opt, rest := httpgrammar.NextElement(value); len(opt) > 0; opt, rest = httpgrammar.NextElement(rest) {
					connClose = connClose || httpgrammar.EqualFold(opt, "close")
					connKeep = connKeep || httpgrammar.EqualFold(opt, "keep-alive")
				}
			}
		case 14:
			if httpgrammar.EqualFold(name, "content-length") {
				n, ok := httpgrammar.ParseContentLength(value)
				if !ok {
					return 0, errContentLength
				}
				if clSeen && n != h.contentLength {
					return 0, errDupLength
				}
				clSeen, h.contentLength = true, n
			}
		case 17:
			if httpgrammar.EqualFold(name, "transfer-encoding") {
				teSeen = true
				if err := te.Add(value); err != nil {
					return 0, grammarError(err)
				}
			}
		}
	}
	if teSeen {
		// RFC 9112 §6.3 lets a recipient let Transfer-Encoding override
		// Content-Length, or read a response whose last coding is not
		// chunked until the close; both are how responses are split and
		// smuggled, so both are refused, as the engine refuses them in
		// requests.
		switch {
		case h.protoMinor == 0:
			return 0, errTEHTTP10
		case clSeen:
			return 0, errCLAndTE
		}
		if err := te.Verdict(); err != nil {
			return 0, grammarError(err)
		}
		h.chunked = true
	}
	if h.protoMinor >= 1 {
		h.close = connClose
	} else {
		h.close = connClose || !connKeep
	}
	return pos, nil
}

// parseStatusLine parses "HTTP/1.x SP 3DIGIT SP reason-phrase" (RFC 9112
// §4). A missing " reason-phrase" is taken as an empty one, as clients
// do; the reason may hold HTAB, SP, visible ASCII and obs-text only.
func parseStatusLine(line []byte, h *responseHead) error {
	if len(line) < 12 || line[8] != ' ' {
		if bytes.IndexByte(line, '\r') >= 0 {
			return grammarError(httpgrammar.ErrBareCR)
		}
		return errStatusLine
	}
	v := line[:8]
	if string(v[:5]) != "HTTP/" || v[6] != '.' || v[5] < '0' || v[5] > '9' || v[7] < '0' || v[7] > '9' {
		return errStatusLine
	}
	if v[5] != '1' {
		return errVersion
	}
	h.protoMinor = 0
	if v[7] != '0' {
		h.protoMinor = 1
	}
	code := line[9:12]
	status := 0
	for _, c := range code {
		if c < '0' || c > '9' {
			return errStatusLine
		}
		status = status*10 + int(c-'0')
	}
	if status < 100 || status > 599 {
		// RFC 9110 §15: codes outside 100-599 are invalid; a client is
		// to treat one as a 5xx, and a proxy has no response to pass on.
		return errStatusLine
	}
	h.status = status
	rest := line[12:]
	if len(rest) > 0 {
		if rest[0] != ' ' {
			return errStatusLine
		}
		rest = rest[1:]
	}
	for _, c := range rest {
		if !httpgrammar.IsFieldValueChar(c) {
			if c == '\r' {
				return grammarError(httpgrammar.ErrBareCR)
			}
			return errStatusLine
		}
	}
	h.reason = rest
	return nil
}
