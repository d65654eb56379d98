//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bytes"
	"io"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// A handler writing more than the client's flow-control window allows
// waits for its WINDOW_UPDATE: the server sends no more DATA than the
// window, and the rest once the client opens it.
func TestHTTP2FlowControl(t *testing.T) {
	ca := sluicetest.NewCA(t)
	const size = 100000
	done := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		_, err := w.Write(bytes.Repeat([]byte("x"), size))
		done <- err
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1000})
	h.get(1, "/")
	got := 0
	h.readUntil("1,000 bytes", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
		}
		return got >= 1000
	})
	// The window is spent: nothing more comes until it opens. (A frame
	// sent in error would arrive before the PING's acknowledgement.)
	h.fr.WritePing(false, [8]byte{7})
	h.readUntil("the PING's ACK", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
		}
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck()
	})
	if got != 1000 {
		t.Fatalf("%d bytes of DATA with a window of 1,000", got)
	}
	select {
	case err := <-done:
		t.Fatalf("the handler's write returned (%v) before the window opened", err)
	default:
	}
	h.fr.WriteWindowUpdate(1, size)
	h.fr.WriteWindowUpdate(0, size)
	h.readUntil("the rest", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
			return d.StreamEnded()
		}
		return false
	})
	if got != size {
		t.Errorf("%d bytes in all, want %d", got, size)
	}
	if err := <-done; err != nil {
		t.Errorf("write: %v", err)
	}
}

// A request body is flow controlled: the server opens the windows as the
// handler reads, so a body far larger than the initial windows arrives
// whole; DATA beyond the declared Content-Length resets the stream.
func TestHTTP2RequestBody(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		n, err := io.Copy(io.Discard, r.Body)
		w.WriteString(strconv.FormatInt(n, 10))
		if err != nil {
			w.WriteString(" " + err.Error())
		}
	}), engine.Limits{MaxBodyBytes: 8 << 20})
	const size = 5 << 20
	resp, err := h2Client(t, ca).Post("https://"+addr+"/", "application/octet-stream", bytes.NewReader(make([]byte, size)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(b) != strconv.Itoa(size) {
		t.Errorf("handler read %s, want %d", b, size)
	}

	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"}, {Name: "content-length", Value: "3"},
	} {
		enc.WriteField(f)
	}
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndHeaders: true})
	h.fr.WriteData(1, true, []byte("four"))
	h.readUntil("the reset", func(f http2.Frame) bool {
		return isReset(t, f, 1, http2.ErrCodeProtocol)
	})
}

// A client that keeps its flow-control window shut takes none of the
// response: after WriteTimeout the stream is reset (CANCEL) and the
// handler's write fails, so the handler does not wait for ever.
func TestHTTP2ShutWindow(t *testing.T) {
	ca := sluicetest.NewCA(t)
	done := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.WriteString("head")
		done <- w.Flush()
	}), engine.Limits{WriteTimeout: 300 * time.Millisecond})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	h.get(1, "/")
	h.readUntil("the reset", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && len(d.Data()) > 0 {
			t.Errorf("DATA through a shut window")
		}
		rst, ok := f.(*http2.RSTStreamFrame)
		if ok && rst.ErrCode != http2.ErrCodeCancel {
			t.Errorf("RST_STREAM %v, want CANCEL", rst.ErrCode)
		}
		return ok
	})
	if err := <-done; err == nil {
		t.Error("the handler's flush succeeded")
	}
}

// A client that opens its window a byte at a time (issue 35, finding 6)
// makes progress, so WriteTimeout never cuts it off; the request-body
// rule does: once BodyTimeout of waiting for windows is over, the
// windows must let MinBodyRate through, or the stream is reset (CANCEL)
// and the handler's write fails, freeing its slot.
func TestHTTP2SlowWindowIsCutOff(t *testing.T) {
	ca := sluicetest.NewCA(t)
	done := make(chan error, 1)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		_, err := w.Write(bytes.Repeat([]byte("x"), 1000))
		if err == nil {
			err = w.Flush()
		}
		done <- err
	}), engine.Limits{BodyTimeout: 200 * time.Millisecond, MinBodyRate: 1000, WriteTimeout: time.Minute})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1})
	h.get(1, "/")
	// A byte of window every 20 ms: 50 bytes/s, a twentieth of the rate
	// (at that pace the 1,000 bytes would take 20 s).
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	frames, stop := make(chan http2.Frame), make(chan struct{})
	defer close(stop)
	go func() {
		defer close(frames)
		for {
			h.c.SetReadDeadline(time.Now().Add(30 * time.Second))
			f, err := h.fr.ReadFrame()
			if err != nil {
				return
			}
			if d, ok := f.(*http2.DataFrame); ok {
				f = &http2.DataFrame{FrameHeader: d.FrameHeader}
			}
			select {
			case frames <- f:
			case <-stop:
				return
			}
		}
	}()
	got := 0
	for {
		select {
		case <-tick.C:
			h.fr.WriteWindowUpdate(1, 1)
			continue
		case f, ok := <-frames:
			if !ok {
				t.Fatal("the connection ended")
			}
			switch f := f.(type) {
			case *http2.DataFrame:
				got += int(f.Length)
				if f.StreamEnded() {
					t.Fatalf("all %d bytes sent through a window opened a byte at a time", got)
				}
				continue
			case *http2.RSTStreamFrame:
				if f.StreamID != 1 || f.ErrCode != http2.ErrCodeCancel {
					t.Errorf("RST_STREAM %d %v, want 1 CANCEL", f.StreamID, f.ErrCode)
				}
			default:
				continue
			}
		}
		break
	}
	if err := <-done; err == nil {
		t.Error("the handler's write succeeded")
	}
	t.Logf("reset after %d bytes", got)
}
