package engine

import (
	"errors"

	"github.com/sluice-server/sluice/httpgrammar"
)

// ProtocolError is a request the server refuses before any handler sees it:
// Status is the response status (400, 413, 414, 417, 431, 501, 505) and Msg
// the short reason sent in the body. The connection is closed after the
// response when Close is set (always, after a framing error).
type ProtocolError struct {
	Status int
	Msg    string
	Close  bool
}

func (e *ProtocolError) Error() string { return statusText(e.Status) + ": " + e.Msg }

func badRequest(msg string) *ProtocolError { return &ProtocolError{Status: 400, Msg: msg, Close: true} }

// The refusals, allocated once. Each names what was wrong, briefly, and the
// RFC 9112/9110 section that makes it an error.
var (
	errRequestLine      = badRequest("malformed request line")                    // RFC 9112 §3
	errMethod           = badRequest("invalid method token")                      // RFC 9110 §9.1
	errTarget           = badRequest("invalid request-target")                    // RFC 9112 §3.2
	errVersion          = badRequest("malformed HTTP version")                    // RFC 9112 §2.3
	errBareCR           = badRequest("bare CR in request")                        // RFC 9112 §2.2
	errMixedEOL         = badRequest("bare LF and CRLF line ends mixed")          // RFC 9112 §2.2, §11.2
	errObsFold          = badRequest("obsolete line folding")                     // RFC 9112 §5.2
	errNoColon          = badRequest("header line without colon")                 // RFC 9112 §5
	errFieldName        = badRequest("invalid header field name")                 // RFC 9110 §5.1
	errSpaceBeforeColon = badRequest("whitespace before colon in header")         // RFC 9112 §5.1
	errFieldValue       = badRequest("invalid character in header value")         // RFC 9110 §5.5
	errNoHost           = badRequest("missing Host header")                       // RFC 9112 §3.2
	errDupHost          = badRequest("duplicate Host header")                     // RFC 9112 §3.2
	errBadHost          = badRequest("invalid Host header")                       // RFC 9112 §3.2
	errContentLength    = badRequest("malformed Content-Length")                  // RFC 9110 §8.6
	errDupLength        = badRequest("conflicting Content-Length values")         // RFC 9112 §6.3
	errCLAndTE          = badRequest("both Content-Length and Transfer-Encoding") // RFC 9112 §6.3
	errTENotChunked     = badRequest("chunked is not the final transfer coding")  // RFC 9112 §6.3
	errTEChunkedTwice   = badRequest("chunked applied more than once")            // RFC 9112 §7
	errTEMalformed      = badRequest("malformed Transfer-Encoding")               // RFC 9112 §6.1
	errTEHTTP10         = badRequest("Transfer-Encoding in an HTTP/1.0 request")  // RFC 9112 §6.1
	errPathNUL          = badRequest("NUL in decoded path")                       // confinement
	errPathEncoding     = badRequest("malformed percent-encoding in path")        // RFC 3986 §2.1
	errPathSlash        = badRequest("encoded slash in path")                     // RFC 3986 §2.2: "%2F" is data, not a delimiter
	errPathAboveRoot    = badRequest("path climbs above the root")                // RFC 3986 §5.2.4, confinement
	errChunkSize        = badRequest("malformed chunk size")                      // RFC 9112 §7.1
	errChunkExt         = badRequest("malformed chunk extension")                 // RFC 9112 §7.1.1
	errChunkEnd         = badRequest("chunk data not followed by CRLF")           // RFC 9112 §7.1
	errChunkLine        = badRequest("chunk line too long")                       // RFC 9112 §7.1
	errChunkBareLF      = badRequest("chunked framing line not ended by CRLF")    // RFC 9112 §7.1
	errTrailer          = badRequest("malformed trailer section")                 // RFC 9112 §7.1.2
	errBodyEOF          = badRequest("request body ended early")                  // RFC 9112 §6.3

	errUnknownTE      = &ProtocolError{Status: 501, Msg: "unsupported transfer coding", Close: true}  // RFC 9112 §6.1
	errUnknownMethod  = &ProtocolError{Status: 501, Msg: "method not implemented", Close: false}      // RFC 9110 §9.1
	errHTTPVersion    = &ProtocolError{Status: 505, Msg: "only HTTP/1.x is served here", Close: true} // RFC 9110 §15.6.6
	errTargetTooLong  = &ProtocolError{Status: 414, Msg: "request-target too long", Close: true}      // RFC 9110 §15.5.15
	errHeaderTooLarge = &ProtocolError{Status: 431, Msg: "header section too large", Close: true}     // RFC 6585 §5
	errTooManyFields  = &ProtocolError{Status: 431, Msg: "too many header fields", Close: true}       // RFC 6585 §5
	errBodyTooLarge   = &ProtocolError{Status: 413, Msg: "request body too large", Close: true}       // RFC 9110 §15.5.14
	errExpectation    = &ProtocolError{Status: 417, Msg: "unsupported expectation", Close: false}     // RFC 9110 §10.1.1
	errRequestTimeout = &ProtocolError{Status: 408, Msg: "request header timeout", Close: true}       // RFC 9110 §15.5.9
)

// errNeedMore reports that the buffer ends before the request head does.
var errNeedMore = errors.New("engine: incomplete request head")

// refusalOf returns the refusal for a rule of the message syntax a
// request broke (an httpgrammar.SyntaxError), nil for nil, and any other
// error as it is.
func refusalOf(err error) error {
	switch err {
	case nil:
		return nil
	case httpgrammar.ErrBareCR:
		return errBareCR
	case httpgrammar.ErrNoColon:
		return errNoColon
	case httpgrammar.ErrSpaceBeforeColon:
		return errSpaceBeforeColon
	case httpgrammar.ErrFieldName:
		return errFieldName
	case httpgrammar.ErrFieldValue:
		return errFieldValue
	case httpgrammar.ErrTEMalformed:
		return errTEMalformed
	case httpgrammar.ErrTEChunkedTwice:
		return errTEChunkedTwice
	case httpgrammar.ErrTENotChunked:
		return errTENotChunked
	case httpgrammar.ErrTEUnknown:
		return errUnknownTE
	case httpgrammar.ErrChunkSize:
		return errChunkSize
	case httpgrammar.ErrChunkExt:
		return errChunkExt
	case httpgrammar.ErrChunkEnd:
		return errChunkEnd
	case httpgrammar.ErrChunkBareLF:
		return errChunkBareLF
	case httpgrammar.ErrIncomplete:
		return errNeedMore
	case httpgrammar.ErrSectionTooLarge:
		return errHeaderTooLarge
	case httpgrammar.ErrMixedEOL:
		return errMixedEOL
	case httpgrammar.ErrObsFold:
		return errObsFold
	case httpgrammar.ErrTrailerField:
		return errTrailer
	}
	return err
}
