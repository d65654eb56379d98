package httpgrammar

// SyntaxError names the rule of RFC 9110 or RFC 9112 a message broke. The
// functions that read a message's framing (SplitFieldLine,
// TransferCodings, ParseChunkLine, NextField, ChunkedDecoder and its Trailer) return one of the constants below, so
// that a server and a client can each map it to their own answer (the
// engine's 400 or 501, the proxy's 502).
type SyntaxError string

// Error returns the rule broken, as a short phrase.
func (e SyntaxError) Error() string { return string(e) }

// The rules broken, one constant each.
const (
	ErrBareCR           SyntaxError = "bare CR"                                  // RFC 9112 §2.2
	ErrNoColon          SyntaxError = "field line without colon"                 // RFC 9112 §5
	ErrSpaceBeforeColon SyntaxError = "whitespace before colon in field line"    // RFC 9112 §5.1
	ErrFieldName        SyntaxError = "invalid field name"                       // RFC 9110 §5.1
	ErrFieldValue       SyntaxError = "invalid character in field value"         // RFC 9110 §5.5
	ErrTEMalformed      SyntaxError = "malformed Transfer-Encoding"              // RFC 9112 §6.1
	ErrTEChunkedTwice   SyntaxError = "chunked applied more than once"           // RFC 9112 §7
	ErrTENotChunked     SyntaxError = "chunked is not the final transfer coding" // RFC 9112 §6.3
	ErrTEUnknown        SyntaxError = "unsupported transfer coding"              // RFC 9112 §6.1
	ErrChunkSize        SyntaxError = "malformed chunk size"                     // RFC 9112 §7.1
	ErrChunkExt         SyntaxError = "malformed chunk extension"                // RFC 9112 §7.1.1
	ErrChunkEnd         SyntaxError = "chunk data not followed by CRLF"          // RFC 9112 §7.1
	ErrChunkBareLF      SyntaxError = "chunked framing line not ended by CRLF"   // RFC 9112 §7.1
	ErrMixedEOL         SyntaxError = "bare LF and CRLF line ends mixed"         // RFC 9112 §2.2, §11.2
	ErrObsFold          SyntaxError = "obsolete line folding"                    // RFC 9112 §5.2
	ErrTrailerField     SyntaxError = "malformed trailer section"                // RFC 9112 §7.1.2
)
