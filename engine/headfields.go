package engine

import (
	"github.com/sluice-server/sluice/httpgrammar"
)

// headFields gathers, field line by field line, what parseHead needs from
// the fields that frame a request or steer the connection: Host,
// Content-Length, Transfer-Encoding, Connection and Expect, each handled by
// the method of its name. apply then judges the head as a whole.
type headFields struct {
	hostSeen  bool
	clSeen    bool
	teSeen    bool
	te        httpgrammar.TransferCodings
	connClose bool
	connKeep  bool
	expCont   bool // Expect lists 100-continue
	expOther  bool // Expect lists something else
}

// host handles a Host field line (RFC 9112 §3.2): one only, a valid
// uri-host [ ":" port ].
func (h *headFields) host(req *Request, value []byte) error {
	if h.hostSeen {
		return errDupHost
	}
	h.hostSeen = true
	if !validHost(value) {
		return errBadHost
	}
	if req.Host == nil {
		req.Host = value
	} else {
		// The target gave the authority (absolute-form, or CONNECT's
		// authority-form), and the received Host is to be ignored and
		// replaced with it (RFC 9112 §3.2.2): the field says the same, so
		// that code reading Fields (CGI's HTTP_HOST, a log of the header)
		// sees the host that Host says.
		req.Fields[len(req.Fields)-1].Value = req.Host
	}
	return nil
}

// expect handles an Expect field line (RFC 9110 §10.1.1).
func (h *headFields) expect(value []byte) {
	addExpectations(value, &h.expCont, &h.expOther)
}

// connection handles a Connection field line (RFC 9110 §7.6.1).
func (h *headFields) connection(value []byte) {
	addConnectionOptions(value, &h.connClose, &h.connKeep)
}

// transferEncoding handles a Transfer-Encoding field line (RFC 9112
// §6.1); apply judges the whole list.
func (h *headFields) transferEncoding(value []byte) error {
	h.teSeen = true
	return refusalOf(h.te.Add(value))
}

// contentLength handles a Content-Length field line (RFC 9110 §8.6):
// repeated lines must agree.
func (h *headFields) contentLength(req *Request, value []byte) error {
	n, ok := parseContentLength(value)
	if !ok {
		return errContentLength
	}
	if h.clSeen && n != req.ContentLength {
		return errDupLength
	}
	h.clSeen = true
	req.ContentLength = n
	return nil
}

// apply judges the head as a whole once all its field lines are in, and
// sets req's Host (when absent), framing, persistence and expectations.
// It returns errExpectation for an expectation the server cannot meet,
// with req otherwise complete.
func (h *headFields) apply(req *Request) error {
	if req.ProtoMinor >= 1 && !h.hostSeen {
		return errNoHost
	}
	if req.Host == nil {
		req.Host = req.Path[:0] // empty, non-nil
	}
	if h.teSeen {
		if req.ProtoMinor == 0 {
			return errTEHTTP10
		}
		if h.clSeen {
			return errCLAndTE
		}
		if err := h.te.Verdict(); err != nil {
			return refusalOf(err)
		}
		req.ContentLength = -1
	}
	if req.ProtoMinor >= 1 {
		req.close = h.connClose
	} else {
		req.close = h.connClose || !h.connKeep
	}
	// RFC 9110 §10.1.1: HTTP/1.0 expectations are ignored.
	if req.ProtoMinor >= 1 {
		if h.expOther {
			req.expectOther = true
			return errExpectation
		}
		req.expectCont = h.expCont
	}
	return nil
}

// addExpectations reads the list of one Expect field line (RFC 9110
// §10.1.1: Expect = #expectation) into cont (100-continue, in any case)
// and other (any other expectation). Repeated lines are one list (RFC 9110
// §5.3), so they accumulate; empty elements are ignored (§5.6.1).
func addExpectations(v []byte, cont, other *bool) {
	for item, rest := httpgrammar.NextElement(v); len(item) > 0; item, rest = httpgrammar.NextElement(rest) {
		switch {
		case httpgrammar.EqualFold(item, "100-continue"):
			*cont = true
		default:
			*other = true
		}
	}
}

// addConnectionOptions reads the list of one Connection field line (RFC
// 9110 §7.6.1: Connection = #connection-option) into close and keepAlive,
// in one pass; repeated lines accumulate.
func addConnectionOptions(v []byte, close, keepAlive *bool) {
	for opt, rest := httpgrammar.NextElement(v); len(opt) > 0; opt, rest = httpgrammar.NextElement(rest) {
		switch {
		case httpgrammar.EqualFold(opt, "close"):
			*close = true
		case httpgrammar.EqualFold(opt, "keep-alive"):
			*keepAlive = true
		}
	}
}
