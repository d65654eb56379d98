//lint:file-ignore SA1019 the tests drive x/net/http2's Framer on purpose.

package engine_test

import (
	"bytes"
	"strconv"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// The tests of this file catch one-line bugs a mutation audit found the
// suite let through: each fails if the rule it names is dropped.

// postBlock encodes a POST of / declaring Content-Length cl.
func postBlock(cl int) []byte {
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "POST"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"},
		{Name: "content-length", Value: strconv.Itoa(cl)},
	} {
		enc.WriteField(f)
	}
	return buf.Bytes()
}

// dataUntilPing sends a PING and counts the DATA bytes that arrive before
// its acknowledgement (a frame sent in error would arrive first).
func (h *h2Conn) dataUntilPing(got *int) {
	h.t.Helper()
	h.fr.WritePing(false, [8]byte{9})
	h.readUntil("the PING's ACK", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			*got += len(d.Data())
		}
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck()
	})
}

// The connection's send window bounds DATA as the stream's does: with a
// stream window far larger than the connection's 65,535 bytes, no more
// than 65,535 bytes come until the client opens the connection window.
func TestHTTP2ConnectionSendWindow(t *testing.T) {
	ca := sluicetest.NewCA(t)
	const size = 200000
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		w.Write(bytes.Repeat([]byte("x"), size))
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20})
	h.get(1, "/")
	got := 0
	h.readUntil("65,535 bytes", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok {
			got += len(d.Data())
		}
		return got >= 65535
	})
	h.dataUntilPing(&got)
	if got != 65535 {
		t.Fatalf("%d bytes of DATA with a connection window of 65,535", got)
	}
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
}

// A stream's receive window is charged for the DATA it receives: a
// client that sends more than the stream's 256 KiB window to a handler
// that does not read has the stream reset with FLOW_CONTROL_ERROR,
// though the connection's window (1 MiB) still has room.
func TestHTTP2StreamReceiveWindow(t *testing.T) {
	ca := sluicetest.NewCA(t)
	release := make(chan struct{})
	defer close(release)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		<-release // reads nothing: no window is returned
	}), engine.Limits{MaxBodyBytes: 8 << 20})
	h := dialH2(t, ca, addr)
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: postBlock(1 << 20), EndHeaders: true})
	chunk := make([]byte, 16384)
	for range 17 { // 278,528 bytes, over 262,144
		if err := h.fr.WriteData(1, false, chunk); err != nil {
			t.Fatal(err)
		}
	}
	h.fr.WritePing(false, [8]byte{9}) // its ACK would come after a reset
	h.readUntil("the reset", func(f http2.Frame) bool {
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			t.Fatal("no reset: the stream's window was not charged")
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("GOAWAY %v: the connection window was charged, not the stream's", g.ErrCode)
		}
		return isReset(t, f, 1, http2.ErrCodeFlowControl)
	})
}

// END_STREAM before the declared Content-Length is complete is malformed
// (RFC 9113 §8.1.1): the stream is reset with PROTOCOL_ERROR, and the
// handler does not answer as if the short body were the whole of it.
func TestHTTP2BodyShorterThanContentLength(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: postBlock(5), EndHeaders: true})
	h.fr.WriteData(1, true, []byte("abc"))
	h.readUntil("the reset", func(f http2.Frame) bool {
		if d, ok := f.(*http2.DataFrame); ok && d.StreamEnded() {
			t.Fatalf("a 3-byte body of 5 was answered: %q", d.Data())
		}
		return isReset(t, f, 1, http2.ErrCodeProtocol)
	})
}

// DATA on a stream the client half-closed (its END_STREAM came) is a
// stream error STREAM_CLOSED (RFC 9113 §5.1), not more body.
func TestHTTP2DataAfterEndStream(t *testing.T) {
	ca := sluicetest.NewCA(t)
	release := make(chan struct{})
	defer close(release)
	_, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		<-release
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/") // END_STREAM: half-closed (remote) while the handler runs
	h.fr.WriteData(1, false, []byte("more"))
	h.readUntil("the reset", func(f http2.Frame) bool {
		return isReset(t, f, 1, http2.ErrCodeStreamClosed)
	})
}
