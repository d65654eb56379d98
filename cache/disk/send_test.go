package disk

import (
	"bytes"
	"io"
	"os"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// fileWriter records how SendTo hands it the body.
type fileWriter struct {
	sends  []sendCall
	writes int
}

type sendCall struct {
	f      *os.File
	off, n int64
}

func (w *fileWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }
func (w *fileWriter) Flush() error                { return nil }
func (w *fileWriter) Close() error                { return nil }
func (w *fileWriter) SendFile(f *os.File, off, n int64) error {
	w.sends = append(w.sends, sendCall{f, off, n})
	return nil
}

var _ pipe.FileWriter = (*fileWriter)(nil)

// A hit hands the object's own file to the writer by reference, at the
// body's offsets: sendfile(2) when the engine can.
func TestSendToHandsOverTheFile(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	put(t, s, "k", "a head", pattern("k", 0, 10000))
	o, err := s.Get("k")
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close()
	for _, r := range []struct{ off, end, wantOff, wantN int64 }{
		{0, -1, 0, 10000},
		{100, 5100, 100, 5000},
		{9999, -1, 9999, 1},
	} {
		var w fileWriter
		if err := o.SendTo(&w, r.off, r.end, nil); err != nil {
			t.Fatal(err)
		}
		want := sendCall{o.File(), o.BodyOffset() + r.wantOff, r.wantN}
		if w.writes != 0 || len(w.sends) != 1 || w.sends[0] != want {
			t.Errorf("SendTo(%d, %d): %d writes, sends %+v; want one send %+v", r.off, r.end, w.writes, w.sends, want)
		}
	}
}

// Served through a real server: a stored object, a range of it, and an
// object still being written, which the client gets as it grows.
func TestSendToServer(t *testing.T) {
	s := open(t, t.TempDir(), Options{})
	stored := pattern("stored", 0, 200<<10)
	put(t, s, "stored", "", stored)
	w, err := s.Create("growing", nil)
	if err != nil {
		t.Fatal(err)
	}
	growing, err := w.Object()
	if err != nil {
		t.Fatal(err)
	}
	defer growing.Close()
	started := make(chan struct{})
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.Source(func(c *pipe.Conn) pipe.Content {
		var o *Object
		off, end := int64(0), int64(-1)
		switch string(c.Request.Path) {
		case "/growing":
			close(started)
			return func(pw pipe.Writer) error { return growing.SendTo(pw, 0, -1, c.Gone()) }
		case "/part":
			off, end = 1000, 6000
			fallthrough
		default:
			if o, err = s.Get("stored"); err != nil {
				c.Error(404, "not stored")
				return nil
			}
		}
		n, _ := o.Size()
		if end < 0 {
			end = n
		}
		c.Header().SetContentLength(end - off)
		return func(pw pipe.Writer) error {
			defer o.Close()
			return o.SendTo(pw, off, end, nil)
		}
	})))
	if _, body := sluicetest.Get(t, srv.URL+"/stored"); body != string(stored) {
		t.Errorf("GET /stored: %d bytes, not the object", len(body))
	}
	if _, body := sluicetest.Get(t, srv.URL+"/part"); body != string(stored[1000:6000]) {
		t.Errorf("GET /part: %d bytes, not bytes 1000-5999", len(body))
	}
	// The client reads each piece before the next is written.
	want := pattern("growing", 0, 64<<10)
	resp, err := sluicetest.Client.Get(srv.URL + "/growing")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	<-started
	for p := want; len(p) > 0; p = p[4096:] {
		w.Write(p[:4096])
		got := make([]byte, 4096)
		if _, err := io.ReadFull(resp.Body, got); err != nil || !bytes.Equal(got, p[:4096]) {
			t.Fatalf("GET /growing: the piece written: %v", err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(resp.Body); len(rest) != 0 || err != nil {
		t.Errorf("GET /growing after the last piece: %d bytes more, %v", len(rest), err)
	}
}
