package httpgrammar

import (
	"bytes"
	"net/http/httputil"
	"testing"
)

// decodeChunked decodes a whole chunked body held in buf, fed to the
// decoder step bytes at a time as a reader's buffer would fill, and
// returns the data and the trailer lines joined by "|".
func decodeChunked(buf []byte, step int) (data []byte, trailer string, err error) {
	var d ChunkedDecoder
	r, w := 0, min(step, len(buf))
	var lines []string
	for {
		switch d.State {
		case ChunkData:
			if r == w {
				if w == len(buf) {
					return data, "", ErrIncomplete
				}
				w = min(w+step, len(buf))
				continue
			}
			n := int(min(int64(w-r), d.Left))
			data = append(data, buf[r:r+n]...)
			r += n
			d.Consumed(n)
			continue
		case ChunkTrailer:
			name, value, n, err := d.Trailer(buf[r:w], 1<<20, 1<<10)
			r += n
			switch {
			case err == ErrIncomplete && w < len(buf):
				w = min(w+step, len(buf))
			case err != nil:
				return data, "", err
			case name != nil:
				lines = append(lines, string(name)+": "+string(value))
			}
			continue
		case ChunkDone:
			return data, string(bytes.Join(toBytes(lines), []byte("|"))), nil
		}
		n, err := d.Frame(buf[r:w])
		r += n
		if err == ErrIncomplete && w < len(buf) {
			w = min(w+step, len(buf))
		} else if err != nil {
			return data, "", err
		}
	}
}

func TestChunkedDecoder(t *testing.T) {
	for _, c := range []struct {
		in, data, trailer string
		err               error
	}{
		{"5\r\nhello\r\n6;x=\"y\"\r\n world\r\n0\r\n\r\n", "hello world", "", nil},
		{"3\r\nabc\r\n0\r\nA: 1\r\nB: 2\r\n\r\n", "abc", "A: 1|B: 2", nil},
		{"3\nabc\r\n0\r\n\r\n", "", "", ErrChunkBareLF},
		{"3\r\nabcd\r\n0\r\n\r\n", "abc", "", ErrChunkEnd},
		{"3\r\nabc\r\n0\r\n\n", "abc", "", ErrChunkBareLF},
		{"3\r\r\nabc\r\n0\r\n\r\n", "", "", ErrBareCR},
		{"x\r\n", "", "", ErrChunkSize},
		{"3 ;\r\nabc\r\n0\r\n\r\n", "", "", ErrChunkExt},
		{"3\r\nab", "ab", "", ErrIncomplete},
		{"0\r\nA:\t1 \r\n\r\n", "", "A: 1", nil},
		{"0\r\n A: 1\r\n\r\n", "", "", ErrObsFold},
		{"0\r\nA 1\r\n\r\n", "", "", ErrTrailerField},
		{"0\r\nA : 1\r\n\r\n", "", "", ErrTrailerField},
		{"0\r\nA: \x01\r\n\r\n", "", "", ErrTrailerField},
		{"0\r\nA: 1\n\r\n", "", "", ErrChunkBareLF},
		{"0\r\nA: 1\r\n", "", "", ErrIncomplete},
	} {
		for _, step := range []int{1, 2, 7, 1 << 10} {
			data, trailer, err := decodeChunked([]byte(c.in), step)
			if string(data) != c.data || trailer != c.trailer || err != c.err {
				t.Errorf("%q by %d: %q, %q, %v; want %q, %q, %v", c.in, step, data, trailer, err, c.data, c.trailer, c.err)
			}
		}
	}
}

// The decoder reads what net/http/httputil's chunked writer writes, at
// any buffer size; it never reads past the body, and on any input it
// answers the same at every buffer size.
func FuzzChunkedDecoder(f *testing.F) {
	f.Add([]byte("hello world"), []byte("3\r\nabc\r\n0\r\n\r\n"), 3)
	f.Add([]byte(""), []byte("3\r\nabc\r\n0\r\nA: 1\r\n\r\n"), 1)
	f.Fuzz(func(t *testing.T, data, raw []byte, step int) {
		if step <= 0 || step > 1<<12 {
			return
		}
		var body bytes.Buffer
		w := httputil.NewChunkedWriter(&body)
		w.Write(data)
		w.Close()
		body.WriteString("\r\n")
		got, _, err := decodeChunked(body.Bytes(), step)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("%q by %d: %q, %v", body.Bytes(), step, got, err)
		}
		wantData, wantTrailer, wantErr := decodeChunked(raw, 1<<12)
		gotData, gotTrailer, gotErr := decodeChunked(raw, step)
		if !bytes.Equal(gotData, wantData) || gotTrailer != wantTrailer || gotErr != wantErr {
			t.Fatalf("%q by %d: %q, %q, %v; whole: %q, %q, %v", raw, step, gotData, gotTrailer, gotErr, wantData, wantTrailer, wantErr)
		}
	})
}

// Trailer bounds the section's bytes, with its line ends, and its field
// lines, and a line that has not ended within the bytes.
func TestChunkedTrailerLimits(t *testing.T) {
	for _, c := range []struct {
		in                  string
		maxBytes, maxFields int
		err                 error
	}{
		{"A: 1\r\nB: 2\r\n\r\n", 12, 2, nil},
		{"A: 1\r\nB: 2\r\n\r\n", 11, 2, ErrSectionTooLarge},
		{"A: 1\r\nB: 2\r\n\r\n", 12, 1, ErrSectionTooLarge},
		{"A: 12345", 8, 2, ErrSectionTooLarge},
		{"A: 1234", 8, 2, ErrIncomplete},
	} {
		d := ChunkedDecoder{State: ChunkTrailer}
		buf := []byte(c.in)
		var err error
		for d.State == ChunkTrailer && err == nil {
			var n int
			_, _, n, err = d.Trailer(buf, c.maxBytes, c.maxFields)
			buf = buf[n:]
		}
		if err != c.err {
			t.Errorf("Trailer(%q, %d, %d) = %v, want %v", c.in, c.maxBytes, c.maxFields, err, c.err)
		}
	}
}
