// Package httpgrammar reads the syntax that HTTP header fields share (RFC
// 9110 §5): tokens, field values, field lists, q-values, content
// negotiation and the hop-by-hop fields, and the HTTP/1.1 framing rules
// (RFC 9112: the header section, field lines, Content-Length,
// Transfer-Encoding, the chunked coding). It is the one place Sluice reads that syntax: the engine's
// request parser, the proxy's response parser, the router, the file
// server, the components and the load generator all use it. It imports
// only the standard library's bytes and time, allocates nothing, and takes field values as []byte (slices into a
// request's read buffer) or string alike.
//
// # Characters and tokens
//
// IsTokenChar, IsFieldValueChar and IsTargetChar are table lookups, one
// load per byte, for parsers' inner loops; IsToken checks a whole token
// (a method, a field name, a content coding), and IsFieldValue a whole
// field value: the one rule the engine applies to HTTP/1.1 field lines
// and HTTP/2 fields alike. Unhex reads a hexadecimal digit.
//
// # Comparing
//
// Field names, tokens and codings compare under ASCII case folding:
// EqualFold. It folds nothing outside ASCII, unlike strings.EqualFold.
//
// # Field lists
//
// Many fields hold a comma-separated list (RFC 9110 §5.6.1). TrimOWS
// removes the optional whitespace around a value or element; NextElement
// walks a list, skipping empty elements as a recipient must:
//
//	for elem, rest := httpgrammar.NextElement(v); len(elem) > 0; elem, rest = httpgrammar.NextElement(rest) {
//		…
//	}
//
// HasToken asks whether a list names a token (Connection: close). Commas
// inside quoted strings are not recognised; no field Sluice reads by
// these functions puts one there.
//
// # Weights and negotiation
//
// QValue parses a weight (RFC 9110 §12.4.2) into thousandths. Negotiate
// picks, from the server's offers in its order of preference, the one an
// Accept or Accept-Encoding value rates highest, with one rule for ties
// (the server's order) and one for malformed elements (ignored): the
// same answer wherever Sluice negotiates.
//
// # Framing
//
// NextField walks the field lines of a header section in a buffer the
// caller owns: line ends all CRLF or all bare LF, no bare CR, no obs-fold,
// a size bound, each line split and checked by SplitFieldLine; the
// engine's request parser and the proxy's response parser both read
// their heads with it. ChunkedDecoder is the state machine of a chunked
// body and the reader of its trailer section (Trailer), without I/O: the
// caller feeds it its buffer's unread bytes and reads the data itself;
// the engine's request bodies and the upstream client's response bodies
// are both decoded by it. ChunkedLine is the CRLF rule of its chunk-size
// and trailer lines. ErrIncomplete asks either for more bytes.
//
// SplitFieldLine splits and checks one field line; ParseContentLength
// reads a Content-Length; TransferCodings judges a Transfer-Encoding list
// for a recipient that decodes chunked only; ParseChunkLine reads a chunk
// size and checks its extensions. A rule broken is reported as a
// SyntaxError constant (ErrBareCR, ErrFieldName…), which the engine
// answers with 400 or 501 and the proxy with 502: the same strictness on
// both sides of a proxied exchange.
//
// # Cache-Control
//
// ParseCacheControl reads a Cache-Control value (RFC 9111 §5.2) of a
// request or a response into flags and delta-seconds, quoted arguments
// and the qualified no-cache="field" and private="field" forms included;
// the cache and anything else that decides by the field read it there.
//
// # Dates
//
// ParseDate reads an HTTP-date (RFC 9110 §5.6.7) in its three formats,
// IMF-fixdate and the obsolete rfc850-date and asctime-date, all in GMT:
// a date in any other zone is no HTTP-date, which the conditional fields
// then ignore. Unlike net/http's ParseTime, it refuses other zones and
// reads a two-digit year as the RFC says, relative to now.
//
// # Hop-by-hop fields
//
// IsHopByHop tells the fields that belong to one connection (RFC 9110
// §7.6.1): the fixed set and those the Connection field names. A proxy
// drops them before forwarding a message.
package httpgrammar
