package httpgrammar

import (
	"bytes"
	"testing"
)

// scanSection scans the header section at the start of buf with
// NextField, returning its fields as name:value joined by "|" and the error
// that stopped it, if any.
func scanSection(buf []byte, limit int, crlf bool) (string, int, error) {
	var out []string
	pos := 0
	for {
		name, value, next, err := NextField(buf, pos, limit, crlf)
		if err != nil {
			return join(out), pos, err
		}
		pos = next
		if name == nil {
			return join(out), pos, nil
		}
		out = append(out, string(name)+":"+string(value))
	}
}

func join(s []string) string { return string(bytes.Join(toBytes(s), []byte("|"))) }

func toBytes(s []string) [][]byte {
	b := make([][]byte, len(s))
	for i := range s {
		b[i] = []byte(s[i])
	}
	return b
}

func TestNextField(t *testing.T) {
	for _, c := range []struct {
		in     string
		limit  int
		crlf   bool
		fields string
		end    int
		err    error
	}{
		{"A: 1\r\nB: 2\r\n\r\nbody", 100, true, "A:1|B:2", 14, nil},
		{"A: 1\nB: 2\n\nbody", 100, false, "A:1|B:2", 11, nil},
		{"A: 1\r\nB: 2\n\r\n", 100, true, "A:1", 6, ErrMixedEOL},
		{"A: 1\nB: 2\r\n\n", 100, false, "A:1", 5, ErrMixedEOL},
		{"A: 1\r\n\n", 100, true, "A:1", 6, ErrMixedEOL},
		{"A: 1\r\n\r", 100, true, "A:1", 6, ErrIncomplete},
		{"A: 1\r\n\rx", 100, true, "A:1", 6, ErrBareCR},
		{"A: 1\r\r\n", 100, false, "", 0, ErrBareCR},
		{"A: 1\rx", 100, true, "", 0, ErrBareCR},
		{"A: 1\r", 100, true, "", 0, ErrIncomplete},
		{"A: 1\r\n B\r\n\r\n", 100, true, "A:1", 6, ErrObsFold},
		{"\tA: 1\r\n\r\n", 100, true, "", 0, ErrObsFold},
		{"A: 1\r\nB : 2\r\n\r\n", 100, true, "A:1", 6, ErrSpaceBeforeColon},
		{"A: 1\r\nB: 2\r3\r\n\r\n", 100, true, "A:1", 6, ErrBareCR},
		{"A: 1\r\nB: 2\x7f\r\n\r\n", 100, true, "A:1", 6, ErrFieldValue},
		{"A: 1\r\nB: 2\r\n\r\n", 14, true, "A:1|B:2", 14, nil},
		{"A: 1\r\nB: 2\r\n\r\n", 13, true, "A:1|B:2", 12, ErrSectionTooLarge},
		{"A: 1\r\nB: 2\r\n\r\n", 11, true, "A:1", 6, ErrSectionTooLarge},
		{"A: 1\r\nB: 2", 10, true, "A:1", 6, ErrSectionTooLarge},
		{"A: 1\r\nB: 2", 11, true, "A:1", 6, ErrIncomplete},
	} {
		fields, end, err := scanSection([]byte(c.in), c.limit, c.crlf)
		if fields != c.fields || end != c.end || err != c.err {
			t.Errorf("%q limit %d: %q, %d, %v; want %q, %d, %v", c.in, c.limit, fields, end, err, c.fields, c.end, c.err)
		}
	}
}

// NextField on a prefix of a section either waits for more, or
// answers as it does on the whole; a field line it returns is a view of
// buf without LF.
func FuzzNextField(f *testing.F) {
	f.Add([]byte("A:1\r\nB: 2\r\n\r\n"), 14, true)
	f.Add([]byte("A:1\nB: 2\n\n"), 100, false)
	f.Add([]byte("A:1\r\n B\r\n\rx"), 100, true)
	f.Fuzz(func(t *testing.T, buf []byte, limit int, crlf bool) {
		fields, end, err := scanSection(buf, limit, crlf)
		if err == nil && (end > len(buf) || end > limit) {
			t.Fatalf("%q: end %d past the buffer or limit %d", buf, end, limit)
		}
		if bytes.IndexByte([]byte(fields), '\n') >= 0 {
			t.Fatalf("%q: fields %q hold a line end", buf, fields)
		}
		for k := range len(buf) {
			pf, pend, perr := scanSection(buf[:k], limit, crlf)
			switch {
			case perr == ErrIncomplete, perr == ErrBareCR, perr == ErrSectionTooLarge:
			case pf != fields || pend != end || perr != err:
				t.Fatalf("%q[:%d]: %q, %d, %v; whole: %q, %d, %v", buf, k, pf, pend, perr, fields, end, err)
			}
		}
	})
}
