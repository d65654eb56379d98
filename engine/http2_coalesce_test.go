package engine

import (
	"bytes"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// The responses to requests a client sends together leave in one write
// even while many other goroutines are runnable, as they are under a
// hundred busy connections: the write waits for the handlers handed to
// runners to begin, not for a single yield, after which the scheduler
// may take it back before they ran. (A busy machine may split a round
// now and then; the test allows a few.)
func TestHTTP2ConcurrentResponsesLeaveInOneWrite(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	s := &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) {
		io.WriteString(w, "ok")
	}), Logger: discardLogger()}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	done := make(chan error, 1)
	go func() { done <- s.ServeWith(cl, ListenerOptions{H2C: true}) }()
	defer func() { s.Close(); <-done }()

	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	io.WriteString(nc, http2.ClientPreface)
	fr := http2.NewFramer(nc, nc)
	fr.WriteSettings()
	for gotSettings, gotAck := false, false; !gotSettings || !gotAck; {
		f, err := fr.ReadFrame()
		if err != nil {
			t.Fatal(err)
		}
		if sf, ok := f.(*http2.SettingsFrame); ok {
			if sf.IsAck() {
				gotAck = true
			} else {
				gotSettings = true
			}
		}
	}
	fr.WriteSettingsAck()
	waitForIdle(t, s, 1)

	// Runnable goroutines, as other connections' handlers are under load.
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range 120 {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			for {
				select {
				case <-stop:
					return
				default:
					runtime.Gosched()
				}
			}
		}()
	}
	defer func() { close(stop); spinners.Wait() }()

	var blk bytes.Buffer
	enc := hpack.NewEncoder(&blk)
	for _, f := range [][2]string{{":method", "GET"}, {":scheme", "http"}, {":authority", "x"}, {":path", "/"}} {
		enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	const streams = 10
	split := 0
	for round := range 50 {
		var req bytes.Buffer
		wf := http2.NewFramer(&req, nil)
		for i := range streams {
			id := uint32(1 + 2*(round*streams+i))
			wf.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: blk.Bytes(), EndStream: true, EndHeaders: true})
		}
		before := cl.writes.Load()
		if _, err := nc.Write(req.Bytes()); err != nil {
			t.Fatal(err)
		}
		for ended := 0; ended < streams; {
			f, err := fr.ReadFrame()
			if err != nil {
				t.Fatal(err)
			}
			if f.Header().Flags.Has(http2.FlagDataEndStream) && (f.Header().Type == http2.FrameData || f.Header().Type == http2.FrameHeaders) {
				ended++
			}
		}
		if n := cl.writes.Load() - before; n != 1 {
			split++
			t.Logf("round %d: the %d responses left in %d writes", round, streams, n)
		}
	}
	// The wait is bounded (a few milliseconds): on a machine busy with
	// other work as well, a round may still outlast it now and then.
	if split > 5 {
		t.Errorf("in %d of 50 rounds the responses left in more than one write, want at most 5", split)
	}
}
