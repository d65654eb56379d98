package proxy

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/net/http2/hpack"

	"github.com/sluice-server/sluice/engine"
)

// BenchmarkH2ClientUnary measures unary gRPC calls, one at a time, sent
// by the proxy's HTTP/2 client and, in the same run to the same gRPC-Go
// upstream, by net/http's (http.ClientConn, as the proxy used it: the
// body of unknown length, read on the client's goroutine): cpu-µs/op is
// the whole process's CPU per call, upstream included.
//
//	go test -run '^$' -bench H2ClientUnary -benchtime 3000x -count 5 ./proxy
func BenchmarkH2ClientUnary(b *testing.B) {
	addr := benchGRPCUpstream(b)
	msg := []byte{0, 0, 0, 0, 4, 'p', 'i', 'n', 'g'}
	ctx := context.Background()
	check := func(b *testing.B, resp *http.Response, err error) {
		if err != nil {
			b.Fatal(err)
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if n != int64(len(msg)) || resp.Trailer.Get("Grpc-Status") != "0" {
			b.Fatalf("%d bytes, trailer %v", n, resp.Trailer)
		}
	}
	b.Run("net-http", func(b *testing.B) {
		tr := &http.Transport{Protocols: new(http.Protocols)}
		tr.Protocols.SetUnencryptedHTTP2(true)
		cc, err := tr.NewClientConn(ctx, "http", addr)
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		call := func() (*http.Response, error) {
			return cc.RoundTrip(&http.Request{
				Method: "POST", URL: &url.URL{Scheme: "http", Host: addr, Path: "/test.Echo/Unary"}, Host: addr,
				Header:        http.Header{"Content-Type": {"application/grpc"}, "Te": {"trailers"}, "User-Agent": nil},
				Body:          io.NopCloser(bytes.NewReader(msg)),
				ContentLength: -1,
			})
		}
		measureCalls(b, call, check)
	})
	b.Run("sluice", func(b *testing.B) {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		cc, err := newH2ClientConn(nc, 64<<10, DefaultMaxHeaderCount, 0, time.Now().Add(10*time.Second))
		if err != nil {
			b.Fatal(err)
		}
		defer cc.Close()
		call := func() (*http.Response, error) {
			r := &engine.Request{ProtoMajor: 2, Body: &wholeBody{r: *bytes.NewReader(msg)}}
			return cc.roundTrip(ctx, &h2Request{
				method: "POST", scheme: "http", authority: addr, path: "/test.Echo/Unary",
				fields: []hpack.HeaderField{{Name: "content-type", Value: "application/grpc"}, {Name: "te", Value: "trailers"}},
				body:   bodyOf(r),
			})
		}
		measureCalls(b, call, check)
	})
}

// measureCalls warms a connection up with 100 calls, then makes b.N,
// checking each, and reports the process's CPU per call.
func measureCalls(b *testing.B, call func() (*http.Response, error), check func(*testing.B, *http.Response, error)) {
	for range 100 {
		resp, err := call()
		check(b, resp, err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for range b.N {
		resp, err := call()
		check(b, resp, err)
	}
	reportCPU(b, start)
}
