//lint:file-ignore SA1019 the tests drive x/net/http2's client and Framer on purpose.

package engine_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// Rapid reset (CVE-2023-44487): a client that opens streams and resets
// them at once cannot make the server run more handlers at a time than
// MaxStreams: the streams it resets keep their handlers counted until
// they return, further streams wait, and a client that piles up more
// than four times MaxStreams of them is sent GOAWAY ENHANCE_YOUR_CALM
// as soon as it does.
func TestHTTP2RapidReset(t *testing.T) {
	ca := sluicetest.NewCA(t)
	release := make(chan struct{})
	var running, most, served atomic.Int32
	srv, addr := h2Server(t, ca, engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		n := running.Add(1)
		defer running.Add(-1)
		served.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release // a slow handler that does not watch Gone
	}), engine.Limits{MaxStreams: 10})
	defer close(release)
	h := dialH2(t, ca, addr)
	bw := bufio.NewWriter(h.c)
	fr := http2.NewFramer(bw, h.c)
	go func() {
		for id := uint32(1); id < 20000; id += 2 {
			if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: headerBlock("/"), EndStream: true, EndHeaders: true}) != nil ||
				fr.WriteRSTStream(id, http2.ErrCodeCancel) != nil {
				return
			}
		}
		bw.Flush()
	}()
	g := h.closedAfter()
	if g == nil || g.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("GOAWAY %+v, want ENHANCE_YOUR_CALM", g)
	}
	// The bound is MaxStreams running and four times MaxStreams waiting:
	// the stream after those 50 is the one GOAWAY names as the last, give
	// or take a few in flight, however many more the client sends.
	const bound, slack = 10 + 4*10, 5
	if opened := int(g.LastStreamID+1) / 2; opened < bound || opened > bound+1+slack {
		t.Errorf("cut off after %d streams, want %d to %d", opened, bound, bound+1+slack)
	}
	if n := most.Load(); n > 10 {
		t.Errorf("%d handlers ran at once, over MaxStreams 10", n)
	}
	if n := served.Load(); n > 10 {
		t.Errorf("%d streams reached the handler; want at most 10", n)
	}
	_ = srv
}

// A header block that grows past MaxHeaderBytes over CONTINUATION frames
// (CVE-2024-27316) ends the connection with GOAWAY PROTOCOL_ERROR as
// soon as it is over the limit, however many frames the client still
// sends: the server does not buffer them.
func TestHTTP2ContinuationFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxHeaderBytes: 8 << 10})
	h := dialH2(t, ca, addr)
	big := strings.Repeat("v", 1000)
	var sent atomic.Int64
	go func() {
		var buf bytes.Buffer
		enc := hpack.NewEncoder(&buf)
		h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/")})
		for i := range 100000 { // 100 MB if nothing stopped it
			buf.Reset()
			enc.WriteField(hpack.HeaderField{Name: fmt.Sprintf("x-%d", i), Value: big, Sensitive: true})
			if h.fr.WriteContinuation(1, false, buf.Bytes()) != nil {
				return
			}
			sent.Add(int64(buf.Len()))
		}
	}()
	if g := h.closedAfter(); g == nil || g.ErrCode != http2.ErrCodeProtocol {
		t.Errorf("GOAWAY %+v, want PROTOCOL_ERROR", g)
	}
	if n := sent.Load(); n >= 100000*1000 {
		t.Errorf("the client sent all %d bytes of CONTINUATION", n)
	}
}

// A flood of empty CONTINUATION frames, which never grows the header
// block, does not hold the connection past IdleTimeout: no stream is
// open, so the connection is idle, and is sent GOAWAY and closed.
func TestHTTP2EmptyContinuationFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{IdleTimeout: 300 * time.Millisecond})
	h := dialH2(t, ca, addr)
	go func() {
		h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: headerBlock("/")})
		for h.fr.WriteContinuation(1, false, nil) == nil {
		}
	}()
	h.closedAfter()
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}

// An HPACK bomb, a small header block that decodes to far more than
// MaxHeaderBytes by repeating a reference to a large dynamic-table
// entry, is refused with 431 on its stream without decoding it whole;
// the connection serves on.
func TestHTTP2HPACKBomb(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{MaxHeaderBytes: 16 << 10})
	h := dialH2(t, ca, addr)
	var buf bytes.Buffer
	enc := hpack.NewEncoder(&buf)
	for _, f := range []hpack.HeaderField{
		{Name: ":method", Value: "GET"}, {Name: ":scheme", Value: "https"},
		{Name: ":authority", Value: "x"}, {Name: ":path", Value: "/"},
		{Name: "x-bomb", Value: strings.Repeat("b", 3000)}, // into the dynamic table, as entry 62
	} {
		enc.WriteField(f)
	}
	block := append(buf.Bytes(), bytes.Repeat([]byte{0x80 | 62}, 4000)...) // 4,000 references: 12 MB decoded
	if err := h.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
		t.Fatal(err)
	}
	h.get(3, "/after")
	status := map[uint32]string{}
	h.readUntil("both responses", func(f http2.Frame) bool {
		if m, ok := f.(*http2.MetaHeadersFrame); ok {
			status[m.StreamID] = m.PseudoValue("status")
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("GOAWAY %v", g.ErrCode)
		}
		return len(status) == 2
	})
	if status[1] != "431" || status[3] != "200" {
		t.Errorf("statuses %v, want 431 for the bomb and 200 after it", status)
	}
}

// A PING flood: a client that sends PINGs without reading the
// acknowledgements is disconnected once 10,000 of them are queued,
// rather than the server buffering them without bound.
func TestHTTP2PingFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	srv, addr := h2Server(t, ca, h2Describe, engine.Limits{})
	h := dialH2(t, ca, addr)
	bw := bufio.NewWriterSize(h.c, 64<<10)
	fr := http2.NewFramer(bw, h.c)
	n := 0
	for ; n < 2000000 && fr.WritePing(false, [8]byte{1}) == nil; n++ { // 34 MB at most
	}
	bw.Flush()
	sluicetest.WaitFor(t, "the connection closed", func() bool { return srv.OpenConns() == 0 })
}

// A SETTINGS flood costs the server no memory: the acknowledgements of
// frames that arrive before the server could answer are one (x/net keeps
// a flag, not a queue). Nor can it cost CPU without end: past 1,000
// SETTINGS frames and entries with no stream opened between them, the
// connection is sent GOAWAY ENHANCE_YOUR_CALM and closed; a client that
// sends as many over many streams is served on.
func TestHTTP2SettingsFlood(t *testing.T) {
	ca := sluicetest.NewCA(t)
	_, addr := h2Server(t, ca, h2Describe, engine.Limits{})

	h := dialH2(t, ca, addr)
	for id := uint32(1); id < 20; id += 2 { // 4,000 SETTINGS frames, 400 a stream
		for range 200 {
			h.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0})
		}
		h.get(id, "/")
		if s := h.responseOf(id); s != "200" {
			t.Fatalf("stream %d: status %q", id, s)
		}
	}

	h = dialH2(t, ca, addr)
	go func() {
		bw := bufio.NewWriterSize(h.c, 64<<10)
		fr := http2.NewFramer(bw, h.c)
		for range 100000 {
			if fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0}) != nil {
				return
			}
		}
		bw.Flush()
	}()
	acks := 0
	var g *http2.GoAwayFrame
	for g == nil {
		h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		f, err := h.fr.ReadFrame()
		if err != nil {
			t.Fatalf("no GOAWAY after %d acknowledgements: %v", acks, err)
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if f.IsAck() {
				acks++
			}
		case *http2.GoAwayFrame:
			g = f
		}
	}
	if g.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", g.ErrCode)
	}
	if acks > 1000 {
		t.Errorf("%d acknowledgements", acks)
	}
}
