package engine

import (
	"errors"

	"github.com/sluice-server/sluice/httpgrammar"
)

// InterimWriter is implemented by the engine's ResponseWriter: it sends
// an interim (1xx) response with fields of its own, as a proxy passes on
// an upstream's 103 Early Hints, without touching the final response's
// header.
type InterimWriter interface {
	// WriteInterim sends the 1xx response code (not 101) with fields,
	// name and value pairs, at once. HTTP/1.0 clients get none (RFC 9110
	// §15.2); nor does anyone once the final response is committed. A 1xx
	// has no content, so Content-Length and Transfer-Encoding among the
	// fields are left out (RFC 9110 §8.6, RFC 9112 §6.1): a recipient
	// that believed them would take the final response for content.
	WriteInterim(code int, fields ...string) error
}

var _ InterimWriter = (*response)(nil)

// WriteInterim implements InterimWriter.
func (w *response) WriteInterim(code int, fields ...string) error {
	if code < 100 || code > 199 || code == 101 {
		return errors.New("engine: WriteInterim of a status that is not 1xx")
	}
	if w.committed || w.req.ProtoMinor == 0 || w.err != nil {
		return w.err
	}
	if code == 100 {
		if w.c.s.body.continueSent {
			return nil
		}
		w.c.s.body.continueSent = true
	}
	s := w.c.s
	s.out = appendStatusLine(s.out, code)
	for i := 0; i+1 < len(fields); i += 2 {
		if interimDrops(fields[i]) {
			continue
		}
		s.out = appendSafe(s.out, fields[i])
		s.out = append(s.out, ": "...)
		s.out = appendSafe(s.out, fields[i+1])
		s.out = append(s.out, "\r\n"...)
	}
	s.out = append(s.out, "\r\n"...)
	if err := w.c.flush(); err != nil {
		w.err = err
	}
	return w.err
}

// interimDrops reports whether an interim response leaves out the field
// name, which only a response with content may carry.
func interimDrops(name string) bool {
	return httpgrammar.EqualFold(name, "Content-Length") || httpgrammar.EqualFold(name, "Transfer-Encoding")
}
