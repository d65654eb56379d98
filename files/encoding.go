package files

import "github.com/sluice-server/sluice/httpgrammar"

// negotiate picks the representation of the file e for an Accept-Encoding
// field value ae (nil when absent): one of e's precompressed variants, or
// e itself (identity), as httpgrammar.Negotiate chooses among the
// variants' codings in the server's order, followed by identity. A
// variant is sent only when the client rates it at least as high as
// identity. When nothing is acceptable the original is sent, as RFC 7231
// §5.3.4 advised: an error page would help no one.
//
// negotiate does not allocate.
func negotiate(ae []byte, e *entry) *entry {
	if ae == nil || len(e.variants) == 0 {
		return e
	}
	var buf [8]string
	offers := buf[:0]
	for _, v := range e.variants {
		offers = append(offers, v.encoding)
	}
	offers = append(offers, "identity")
	if i := httpgrammar.Negotiate(ae, offers); i >= 0 && i < len(e.variants) {
		return e.variants[i]
	}
	return e
}
