package httpgrammar

// EqualFold reports whether a equals b under ASCII case folding, the
// comparison HTTP uses for field names, tokens and codings (RFC 9110 §5.1,
// §8.4.1). Unlike strings.EqualFold it folds no other letter: "\u212A"
// (KELVIN SIGN) does not equal "k". It does not allocate.
func EqualFold[A, B ~string | ~[]byte](a A, b B) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range len(a) {
		x, y := a[i], b[i]
		if x == y {
			continue
		}
		if x|0x20 != y|0x20 || x|0x20 < 'a' || x|0x20 > 'z' {
			return false
		}
	}
	return true
}
