package proxy

import (
	"context"
	"net"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// cpuTime is the CPU time (user and system) the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// reportCPU reports the process's CPU time per op since start, as
// cpu-µs/op.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(cpuTime()-start)/float64(time.Microsecond)/float64(b.N), "cpu-µs/op")
}

// benchGRPCUpstream starts an h2c gRPC server of echoService and
// returns its address.
func benchGRPCUpstream(b *testing.B) string {
	s := grpc.NewServer(grpc.ForceServerCodec(rawCodec{}))
	s.RegisterService((&echoService{}).desc(), struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go s.Serve(ln)
	b.Cleanup(s.Stop)
	return ln.Addr().String()
}

// BenchmarkGRPCDirect is BenchmarkGRPCThroughProxy without the proxy:
// the same client calling the same server over h2c. What the proxy
// costs per call is the difference of the two cpu-µs/op.
func BenchmarkGRPCDirect(b *testing.B) {
	addr := benchGRPCUpstream(b)
	cc, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	benchUnary(b, cc)
}

// benchUnary makes b.N unary calls on cc, one at a time, after 100 to
// warm up, reporting the process's CPU per call.
func benchUnary(b *testing.B, cc *grpc.ClientConn) {
	ctx := context.Background()
	in := []byte("ping")
	for range 100 { // warm: connections, HPACK tables
		var out []byte
		if err := cc.Invoke(ctx, "/test.Echo/Unary", &in, &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	for range b.N {
		var out []byte
		if err := cc.Invoke(ctx, "/test.Echo/Unary", &in, &out); err != nil || string(out) != "ping" {
			b.Fatalf("got %q, %v", out, err)
		}
	}
	reportCPU(b, start)
}

// BenchmarkGRPCThroughProxy measures unary gRPC calls, one at a time,
// from a gRPC-Go client over TLS and HTTP/2 through a Proxy with
// transport h2c to a gRPC-Go server, all in this process: cpu-µs/op is
// the whole process's CPU per call (client, proxy and upstream), so
// that two builds of the proxy compare by it, run alternately on the
// same machine, and BenchmarkGRPCDirect's subtracted from it is the
// proxy's:
//
//	go test -run '^$' -bench GRPCThroughProxy -benchtime 3000x -count 5 ./proxy
func BenchmarkGRPCThroughProxy(b *testing.B) {
	addr := benchGRPCUpstream(b)
	logger, _ := sluicetest.Logger()
	p, err := New(Options{Upstreams: []string{"http://" + addr}, Transport: TransportH2C, Logger: logger})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.Close() })
	srv := sluicetest.NewTLSServer(b, pipe.Handler(pipe.Chain{p}), sluicetest.HTTP2())
	cc, err := grpc.NewClient("passthrough:///"+srv.Addr,
		grpc.WithTransportCredentials(credentials.NewTLS(srv.ClientConfig())),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cc.Close() })
	benchUnary(b, cc)
}
