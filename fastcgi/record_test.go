package fastcgi

import (
	"bytes"
	"errors"
	"os"
	"testing"
)

// parsed is what a recordReader made of a server's bytes.
type parsed struct {
	stdout, stderr string
	ended          bool
	app            uint32
	proto          byte
	rest           int // bytes left after END_REQUEST
}

// parseAll feeds b to a new recordReader chunk bytes at a time.
func parseAll(b []byte, chunk int) (parsed, error) {
	var rr recordReader
	var p parsed
	var out, errOut bytes.Buffer
	for off := 0; off < len(b); {
		piece := b[off:min(off+chunk, len(b))]
		for len(piece) > 0 {
			n, ev, data, err := rr.next(piece)
			if err != nil {
				return p, err
			}
			switch ev {
			case evStdout:
				out.Write(data)
			case evStderr:
				errOut.Write(data)
			case evEnd:
				p.ended, p.app, p.proto = true, rr.appStatus, rr.protocolStatus
			}
			if rr.done {
				p.rest = len(b) - off - n
				p.stdout, p.stderr = out.String(), errOut.String()
				return p, nil
			}
			if n == 0 {
				panic("next consumed nothing")
			}
			piece = piece[n:]
			off += n
		}
	}
	p.stdout, p.stderr = out.String(), errOut.String()
	return p, nil
}

func rec(typ, id byte, content string, pad int) string {
	h := []byte{1, typ, 0, id, byte(len(content) >> 8), byte(len(content)), byte(pad), 0}
	return string(h) + content + string(make([]byte, pad))
}

func end(app uint32, proto byte) string {
	return rec(typeEndRequest, 1, string([]byte{byte(app >> 24), byte(app >> 16), byte(app >> 8), byte(app), proto, 0, 0, 0}), 0)
}

func TestRecordReader(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want parsed
		err  bool
	}{
		{"stdout then end", rec(6, 1, "Content-Type: text/plain\r\n\r\nhi", 0) + rec(6, 1, "", 0) + end(0, 0),
			parsed{stdout: "Content-Type: text/plain\r\n\r\nhi", ended: true}, false},
		{"padding", rec(6, 1, "abc", 5) + rec(7, 1, "warn\n", 3) + rec(6, 1, "", 0) + rec(3, 1, "\x00\x00\x00\x07\x00\x00\x00\x00", 8),
			parsed{stdout: "abc", stderr: "warn\n", ended: true, app: 7}, false},
		{"management records skipped", rec(10, 0, "\x0eFCGI_MAX_CONNS", 2) + rec(11, 0, "\x09\x00\x00\x00\x00\x00\x00\x00", 0) + rec(99, 0, "x", 0) + rec(6, 1, "a", 0) + end(0, 0),
			parsed{stdout: "a", ended: true}, false},
		{"overloaded", end(0, statusOverloaded), parsed{ended: true, proto: statusOverloaded}, false},
		{"bytes after end", end(0, 0) + "junk", parsed{ended: true, rest: 4}, false},
		{"truncated", rec(6, 1, "abc", 0)[:6], parsed{}, false},
		{"version 2", "\x02" + rec(6, 1, "a", 0)[1:], parsed{}, true},
		{"other request", rec(6, 2, "a", 0), parsed{}, true},
		{"stdin from server", rec(5, 1, "a", 0), parsed{}, true},
		{"params from server", rec(4, 1, "", 0), parsed{}, true},
		{"begin from server", rec(1, 1, "\x00\x01\x00\x00\x00\x00\x00\x00", 0), parsed{}, true},
		{"stdout for request 0", rec(6, 0, "a", 0), parsed{}, true},
		{"short end", rec(3, 1, "\x00\x00\x00\x00", 0), parsed{}, true},
		{"long end", rec(3, 1, "\x00\x00\x00\x00\x00\x00\x00\x00\x00", 0), parsed{}, true},
		{"unknown type for the request", rec(42, 1, "", 0), parsed{}, true},
	} {
		for _, chunk := range []int{1, 3, 8, 1 << 20} {
			got, err := parseAll([]byte(tc.in), chunk)
			if (err != nil) != tc.err {
				t.Errorf("%s, chunks of %d: err %v, want error %v", tc.name, chunk, err, tc.err)
				continue
			}
			if err != nil {
				if !errors.Is(err, errProtocol) {
					t.Errorf("%s: %v is not errProtocol", tc.name, err)
				}
				continue
			}
			if got != tc.want {
				t.Errorf("%s, chunks of %d: got %+v, want %+v", tc.name, chunk, got, tc.want)
			}
		}
	}
}

func TestRequestRecords(t *testing.T) {
	var b []byte
	b = appendBeginRequest(b)
	want := "\x01\x01\x00\x01\x00\x08\x00\x00\x00\x01\x01\x00\x00\x00\x00\x00"
	if string(b) != want {
		t.Errorf("BEGIN_REQUEST % x, want % x", b, want)
	}
	long := bytes.Repeat([]byte("v"), 200)
	p := appendPair(nil, "A", []byte("b"))
	p = appendPair(p, "LONG", long)
	wantP := "\x01\x01Ab" + "\x04\x80\x00\x00\xc8LONG" + string(long)
	if string(p) != wantP {
		t.Errorf("pairs % x, want % x", p, wantP)
	}
	big := bytes.Repeat([]byte("x"), maxContent+10)
	s := appendStream(nil, typeStdin, big)
	if len(s) != 2*headerLen+len(big) || s[4] != 0xff || s[5] != 0xff || s[headerLen+maxContent+5] != 10 {
		t.Errorf("stream of %d bytes framed as % x…", len(big), s[:headerLen])
	}
}

func FuzzRecordReader(f *testing.F) {
	f.Add([]byte(rec(6, 1, "Status: 200\r\n\r\nx", 3)+rec(7, 1, "e", 0)+end(1, 0)), 3)
	f.Add([]byte(rec(10, 0, "x", 7)+end(0, 2)+"x"), 1)
	f.Add([]byte(rec(6, 1, "", 255)), 5)
	f.Fuzz(func(t *testing.T, b []byte, chunk int) {
		if chunk <= 0 || chunk > len(b)+1 {
			chunk = len(b) + 1
		}
		whole, err := parseAll(b, len(b)+1)
		pieces, err2 := parseAll(b, chunk)
		if (err == nil) != (err2 == nil) || whole != pieces {
			t.Fatalf("whole: %+v %v; in chunks of %d: %+v %v", whole, err, chunk, pieces, err2)
		}
		if whole.ended && whole.rest < 0 || len(whole.stdout)+len(whole.stderr) > len(b) {
			t.Fatalf("impossible result %+v from %d bytes", whole, len(b))
		}
	})
}

func writeBytes(path, s string) error { return os.WriteFile(path, []byte(s), 0o644) }
