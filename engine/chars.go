package engine

import "github.com/sluice-server/sluice/httpgrammar"

// The names body.go still uses for httpgrammar's classes and helpers,
// until it is changed to call httpgrammar directly; nothing else in the
// engine should use them.
var (
	tokenChars = charTable(httpgrammar.IsTokenChar)
	valueChars = charTable(httpgrammar.IsFieldValueChar)
)

func charTable(in func(byte) bool) (t [256]bool) {
	for c := range t {
		t[c] = in(byte(c))
	}
	return t
}

func isToken(b []byte) bool     { return httpgrammar.IsToken(b) }
func trimOWS(b []byte) []byte   { return httpgrammar.TrimOWS(b) }
func unhex(c byte) (byte, bool) { return httpgrammar.Unhex(c) }
