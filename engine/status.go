package engine

import (
	"net/http"
	"strconv"
)

// statusLines holds "HTTP/1.1 NNN Reason\r\n" for every status net/http
// names, built once so a response's first line is one append.
var statusLines [600][]byte

func init() {
	for code := 100; code < 600; code++ {
		if text := reasonPhrase(code); text != "" {
			statusLines[code] = []byte("HTTP/1.1 " + strconv.Itoa(code) + " " + text + "\r\n")
		}
	}
}

// appendStatusLine appends the status line for code. Codes without a
// registered reason phrase get an empty one, which RFC 9112 §4 allows.
func appendStatusLine(b []byte, code int) []byte {
	if code >= 100 && code < 600 && statusLines[code] != nil {
		return append(b, statusLines[code]...)
	}
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(code), 10)
	return append(b, " \r\n"...)
}

// reasonPhrase is net/http's text for code, in RFC 9110's newer wording
// where net/http keeps the older one (§15.5.14, §15.5.15, §15.5.17,
// §15.5.21).
func reasonPhrase(code int) string {
	switch code {
	case http.StatusRequestEntityTooLarge:
		return "Content Too Large"
	case http.StatusRequestURITooLong:
		return "URI Too Long"
	case http.StatusRequestedRangeNotSatisfiable:
		return "Range Not Satisfiable"
	case http.StatusUnprocessableEntity:
		return "Unprocessable Content"
	}
	return http.StatusText(code)
}

func statusText(code int) string {
	if t := reasonPhrase(code); t != "" {
		return strconv.Itoa(code) + " " + t
	}
	return strconv.Itoa(code)
}

// bodyAllowed reports whether a response with this status may carry
// content (RFC 9110 §6.4.1: not 1xx, 204 or 304).
func bodyAllowed(code int) bool {
	return code >= 200 && code != 204 && code != 304
}
