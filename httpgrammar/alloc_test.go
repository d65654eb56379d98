//go:build !race

package httpgrammar

import "testing"

// The helpers the engine and the file server call per request do not
// allocate (the race detector would distort the count: make test-alloc
// runs this without it).
func TestAllocs(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { IsHopByHop([]byte("X-A"), []byte("close, x-a")) }); n != 0 {
		t.Errorf("IsHopByHop allocates %v times", n)
	}
	list := []byte("gzip, deflate, br;q=0.9, zstd;q=0.8, */*")
	codings := []string{"br", "zstd", "gzip", "identity"}
	if n := testing.AllocsPerRun(100, func() { Negotiate(list, codings) }); n != 0 {
		t.Errorf("Negotiate allocates %v times", n)
	}
	cc := []byte(`public, max-age=60, no-cache="Set-Cookie", stale-if-error=5, x="a,b"`)
	if n := testing.AllocsPerRun(100, func() { ParseCacheControl(cc) }); n != 0 {
		t.Errorf("ParseCacheControl allocates %v times", n)
	}
}

func TestNextFieldAllocs(t *testing.T) {
	head := []byte("Host: a\r\nAccept: */*\r\n\r\n")
	n := testing.AllocsPerRun(100, func() {
		for pos := 0; ; {
			name, _, next, err := NextField(head, pos, len(head), true)
			if err != nil || name == nil {
				break
			}
			pos = next
		}
	})
	if n != 0 {
		t.Errorf("NextField allocates %v times", n)
	}
}

func TestChunkedDecoderAllocs(t *testing.T) {
	body := []byte("5\r\nhello\r\n0\r\nA: 1\r\n\r\n")
	n := testing.AllocsPerRun(100, func() {
		var d ChunkedDecoder
		r, _ := d.Frame(body) // "5\r\n"
		r += int(d.Left)
		d.Consumed(int(d.Left))
		n, _ := d.Frame(body[r:]) // "\r\n"
		r += n
		n, _ = d.Frame(body[r:]) // "0\r\n"
		r += n
		_, _, n, _ = d.Trailer(body[r:], 1<<10, 10) // "A: 1\r\n"
		d.Trailer(body[r+n:], 1<<10, 10)            // "\r\n"
	})
	if n != 0 {
		t.Errorf("ChunkedDecoder allocates %v times", n)
	}
}
