//lint:file-ignore SA1019 the tests drive x/net/http2's Framer on purpose.

package engine_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// isReset reports whether f is a RST_STREAM frame, failing the test if
// it resets another stream than id, or with another code than code.
func isReset(t *testing.T, f http2.Frame, id uint32, code http2.ErrCode) bool {
	t.Helper()
	rst, ok := f.(*http2.RSTStreamFrame)
	if ok && (rst.StreamID != id || rst.ErrCode != code) {
		t.Errorf("RST_STREAM %d %v, want %d %v", rst.StreamID, rst.ErrCode, id, code)
	}
	return ok
}

// resetsBeforePing sends a PING and reads until its acknowledgement,
// returning the RST_STREAM frames that came before it; a GOAWAY fails
// the test.
func (h *h2Conn) resetsBeforePing() []*http2.RSTStreamFrame {
	h.t.Helper()
	h.fr.WritePing(false, [8]byte{5})
	var rsts []*http2.RSTStreamFrame
	h.readUntil("the PING's ACK", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.RSTStreamFrame:
			rsts = append(rsts, &http2.RSTStreamFrame{FrameHeader: f.FrameHeader, ErrCode: f.ErrCode})
		case *http2.GoAwayFrame:
			h.t.Fatalf("GOAWAY %v", f.ErrCode)
		case *http2.PingFrame:
			return f.IsAck()
		}
		return false
	})
	return rsts
}

// responseOf reads until stream id's response ends, and returns its
// status.
func (h *h2Conn) responseOf(id uint32) string {
	h.t.Helper()
	status := ""
	h.readUntil("the response", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				status = f.PseudoValue("status")
				return f.StreamEnded()
			}
		case *http2.DataFrame:
			return f.StreamID == id && f.StreamEnded()
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				h.t.Fatalf("stream %d reset: %v", id, f.ErrCode)
			}
		}
		return false
	})
	return status
}

// PRIORITY (RFC 9113 §6.3): the priority scheme is ignored, so a PRIORITY
// frame on a stream not yet opened changes nothing and the stream is
// served; a stream made to depend on itself is reset PROTOCOL_ERROR, a
// frame of other than 5 bytes FRAME_SIZE_ERROR (a stream error), and
// PRIORITY on stream 0 ends the connection with PROTOCOL_ERROR.
func TestHTTP2Priority(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WritePriority(1, http2.PriorityParam{StreamDep: 0, Weight: 200, Exclusive: true})
	h.fr.WritePriority(3, http2.PriorityParam{StreamDep: 1, Weight: 7})
	h.get(1, "/")
	if s := h.responseOf(1); s != "200" {
		t.Errorf("stream 1 after PRIORITY: status %q", s)
	}
	h.fr.WriteRawFrame(http2.FramePriority, 0, 5, []byte{0, 0, 0, 5, 16}) // depends on itself
	h.fr.WriteRawFrame(http2.FramePriority, 0, 7, []byte{0, 0, 0, 0})     // 4 bytes
	rsts := h.resetsBeforePing()
	if len(rsts) != 2 || rsts[0].StreamID != 5 || rsts[0].ErrCode != http2.ErrCodeProtocol ||
		rsts[1].StreamID != 7 || rsts[1].ErrCode != http2.ErrCodeFrameSize {
		t.Errorf("resets %+v, want 5 PROTOCOL_ERROR and 7 FRAME_SIZE_ERROR", rsts)
	}
	h.get(9, "/")
	if s := h.responseOf(9); s != "200" {
		t.Errorf("stream 9: status %q", s)
	}
	h.fr.WriteRawFrame(http2.FramePriority, 0, 0, []byte{0, 0, 0, 1, 16})
	if g := h.closedAfter(); g == nil || g.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("PRIORITY on stream 0: GOAWAY %+v, want PROTOCOL_ERROR", g)
	}
}

// Frames the client sent before it saw the server reset a stream are
// dropped (RFC 9113 §5.4.2): DATA and a trailer on the stream the server
// reset draw no further RST_STREAM and no connection error, and the
// connection serves on; DATA on a stream that simply ended, which the
// server did not reset, is answered STREAM_CLOSED.
func TestHTTP2LateFramesOnResetStream(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: postBlock(3), EndHeaders: true})
	h.fr.WriteData(1, false, []byte("four")) // over Content-Length: reset
	rsts := h.resetsBeforePing()
	if len(rsts) != 1 || rsts[0].StreamID != 1 || rsts[0].ErrCode != http2.ErrCodeProtocol {
		t.Fatalf("resets %+v, want stream 1 PROTOCOL_ERROR", rsts)
	}
	// In flight when the reset was sent:
	h.fr.WriteData(1, false, []byte("more"))
	var buf bytes.Buffer
	hpack.NewEncoder(&buf).WriteField(hpack.HeaderField{Name: "x-trailer", Value: "1"})
	h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: buf.Bytes(), EndStream: true, EndHeaders: true})
	if rsts := h.resetsBeforePing(); len(rsts) != 0 {
		t.Errorf("late frames on a reset stream drew resets %+v", rsts)
	}
	h.get(3, "/")
	if s := h.responseOf(3); s != "200" {
		t.Fatalf("stream 3: status %q", s)
	}
	h.fr.WriteData(3, false, []byte("x"))
	if rsts := h.resetsBeforePing(); len(rsts) != 1 || rsts[0].StreamID != 3 || rsts[0].ErrCode != http2.ErrCodeStreamClosed {
		t.Errorf("DATA on ended stream 3: resets %+v, want 3 STREAM_CLOSED", rsts)
	}
}

// GOAWAY from the client: the streams it opened are served to the end,
// and then the server closes the connection, answering with a GOAWAY of
// its own; a stream opened after it is not served.
func TestHTTP2ClientGoAway(t *testing.T) {
	_, h, release, served := slowH2(t)
	h.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	finishAfterGoAway(t, h, release)
	if n := served.Load(); n != 1 {
		t.Errorf("%d streams served, want 1", n)
	}
}

// Drain whose context ends before a stream does: the listener was closed
// and GOAWAY sent as Drain began, and once the context is done, Drain
// cuts the connection off and returns the context's error.
func TestHTTP2DrainCutOff(t *testing.T) {
	ca := sluicetest.NewCA(t)
	started := make(chan struct{})
	gone := make(chan struct{})
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		close(started)
		<-w.(engine.GoneNotifier).Gone()
		close(gone)
	}), engine.Limits{})
	h := dialH2(t, ca, addr)
	h.get(1, "/")
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- srv.Drain(ctx) }()
	h.readUntil("GOAWAY", func(f http2.Frame) bool {
		g, ok := f.(*http2.GoAwayFrame)
		if ok && (g.LastStreamID != 1 || g.ErrCode != http2.ErrCodeNo) {
			t.Errorf("GOAWAY last stream %d, code %v; want 1, NO_ERROR", g.LastStreamID, g.ErrCode)
		}
		return ok
	})
	if c, err := net.Dial("tcp", addr); err == nil {
		c.Close()
		t.Error("the listener accepts while draining")
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned (%v) with a stream in flight", err)
	default:
	}
	cancel()
	if err := <-drained; !errors.Is(err, context.Canceled) {
		t.Errorf("Drain: %v, want context.Canceled", err)
	}
	h.closedAfter()
	<-gone
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}
