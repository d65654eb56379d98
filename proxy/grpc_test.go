package proxy

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"strconv"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
)

// rawCodec passes gRPC messages as the bytes they are, so that the tests
// need no generated protobuf code: a message is a *[]byte.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error) { return *v.(*[]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error {
	*v.(*[]byte) = append([]byte(nil), data...)
	return nil
}
func (rawCodec) Name() string { return "raw" }

// echoService is the gRPC service the tests' upstreams serve: Unary
// echoes, ServerStream sends as many messages as its request says, then
// a trailer, ClientStream joins what it received, Bidi echoes each
// message as it comes, Fail answers NotFound without a message
// (trailers-only), and Hang sends one message and waits for its call to
// end, telling hung when it started and ended how.
type echoService struct {
	hung chan error // Hang's end: its context's error
	hang chan struct{}
}

func (e *echoService) desc() *grpc.ServiceDesc {
	unary := func(_ any, _ context.Context, dec func(any) error, _ grpc.UnaryServerInterceptor) (any, error) {
		var in []byte
		if err := dec(&in); err != nil {
			return nil, err
		}
		return &in, nil
	}
	fail := func(any, context.Context, func(any) error, grpc.UnaryServerInterceptor) (any, error) {
		return nil, status.Error(codes.NotFound, "no such thing")
	}
	return &grpc.ServiceDesc{
		ServiceName: "test.Echo",
		HandlerType: (*any)(nil),
		Methods:     []grpc.MethodDesc{{MethodName: "Unary", Handler: unary}, {MethodName: "Fail", Handler: fail}},
		Streams: []grpc.StreamDesc{
			{StreamName: "ServerStream", ServerStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
				var in []byte
				if err := s.RecvMsg(&in); err != nil {
					return err
				}
				n, _ := strconv.Atoi(string(in))
				s.SetHeader(metadata.Pairs("x-head", "h"))
				for i := range n {
					out := []byte(strconv.Itoa(i))
					if err := s.SendMsg(&out); err != nil {
						return err
					}
				}
				s.SetTrailer(metadata.Pairs("x-answer", "42"))
				return nil
			}},
			{StreamName: "ClientStream", ClientStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
				var all []byte
				for {
					var in []byte
					err := s.RecvMsg(&in)
					if err == io.EOF {
						return s.SendMsg(&all)
					}
					if err != nil {
						return err
					}
					all = append(all, in...)
				}
			}},
			{StreamName: "Bidi", ServerStreams: true, ClientStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
				for {
					var in []byte
					err := s.RecvMsg(&in)
					if err == io.EOF {
						return nil
					}
					if err != nil {
						return err
					}
					if err := s.SendMsg(&in); err != nil {
						return err
					}
				}
			}},
			{StreamName: "Hang", ServerStreams: true, Handler: func(_ any, s grpc.ServerStream) error {
				var in []byte
				if err := s.RecvMsg(&in); err != nil {
					return err
				}
				if err := s.SendMsg(&in); err != nil {
					return err
				}
				e.hang <- struct{}{}
				<-s.Context().Done()
				e.hung <- s.Context().Err()
				return s.Context().Err()
			}},
		},
	}
}

// grpcUpstream starts a gRPC server of echoService, over TLS when cert
// is given (h2), else h2c; it returns its URL for the proxy, the service
// and the server.
func grpcUpstream(t *testing.T, cert *tls.Certificate) (string, *echoService, *grpc.Server) {
	t.Helper()
	opts := []grpc.ServerOption{grpc.ForceServerCodec(rawCodec{})}
	scheme := "http://"
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}})))
		scheme = "https://"
	}
	s := grpc.NewServer(opts...)
	e := &echoService{hung: make(chan error, 1), hang: make(chan struct{}, 1)}
	s.RegisterService(e.desc(), struct{}{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	t.Cleanup(s.Stop)
	return scheme + ln.Addr().String(), e, s
}

// grpcFront starts Sluice over TLS with HTTP/2, as gRPC clients reach
// it, proxying to upstream by transport, and returns a gRPC client of it.
func grpcFront(t *testing.T, opts Options) *grpc.ClientConn {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger, _ = sluicetest.Logger()
	}
	p, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	srv := sluicetest.NewTLSServer(t, pipe.Handler(pipe.Chain{p}), sluicetest.HTTP2())
	cc, err := grpc.NewClient("passthrough:///"+srv.Addr,
		grpc.WithTransportCredentials(credentials.NewTLS(srv.ClientConfig())),
		grpc.WithDefaultCallOptions(grpc.ForceCodec(rawCodec{})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// gRPC calls of every kind pass through the proxy to a gRPC server over
// h2c and over h2: messages, headers and trailers, statuses, deadlines,
// cancellation, and an upstream that dies mid-call.
func TestGRPC(t *testing.T) {
	ca := sluicetest.NewCA(t)
	caFile := ca.WriteFiles(t, t.TempDir())
	cert := ca.Issue(t, "127.0.0.1")
	for _, tr := range []struct {
		transport string
		cert      *tls.Certificate
		tls       TLSOptions
	}{{TransportH2C, nil, TLSOptions{}}, {TransportH2, &cert, TLSOptions{CA: caFile}}} {
		t.Run(tr.transport, func(t *testing.T) {
			url, svc, upSrv := grpcUpstream(t, tr.cert)
			cc := grpcFront(t, Options{Upstreams: []string{url}, Transport: tr.transport, TLS: tr.tls})
			ctx := context.Background()

			t.Run("unary", func(t *testing.T) {
				in, out := []byte("ping"), []byte(nil)
				if err := cc.Invoke(ctx, "/test.Echo/Unary", &in, &out); err != nil || string(out) != "ping" {
					t.Fatalf("got %q, %v", out, err)
				}
			})
			t.Run("server streaming", func(t *testing.T) {
				s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/test.Echo/ServerStream")
				if err != nil {
					t.Fatal(err)
				}
				n := []byte("5")
				if err := s.SendMsg(&n); err != nil {
					t.Fatal(err)
				}
				s.CloseSend()
				var got []string
				for {
					var out []byte
					err := s.RecvMsg(&out)
					if err == io.EOF {
						break
					}
					if err != nil {
						t.Fatal(err)
					}
					got = append(got, string(out))
				}
				if strings.Join(got, ",") != "0,1,2,3,4" {
					t.Fatalf("got %q", got)
				}
				if h, _ := s.Header(); strings.Join(h.Get("x-head"), "") != "h" {
					t.Errorf("header %v", h)
				}
				if tr := s.Trailer(); strings.Join(tr.Get("x-answer"), "") != "42" {
					t.Errorf("trailer %v", tr)
				}
			})
			t.Run("client streaming", func(t *testing.T) {
				s, err := cc.NewStream(ctx, &grpc.StreamDesc{ClientStreams: true}, "/test.Echo/ClientStream")
				if err != nil {
					t.Fatal(err)
				}
				for _, m := range []string{"a", "b", "c"} {
					b := []byte(m)
					if err := s.SendMsg(&b); err != nil {
						t.Fatal(err)
					}
				}
				s.CloseSend()
				var out []byte
				if err := s.RecvMsg(&out); err != nil || string(out) != "abc" {
					t.Fatalf("got %q, %v", out, err)
				}
			})
			t.Run("bidirectional", func(t *testing.T) {
				// Each answer is awaited before the next message is sent:
				// nothing may be held back either way.
				s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true, ClientStreams: true}, "/test.Echo/Bidi")
				if err != nil {
					t.Fatal(err)
				}
				for i := range 20 {
					b := []byte("m" + strconv.Itoa(i))
					if err := s.SendMsg(&b); err != nil {
						t.Fatal(err)
					}
					var out []byte
					if err := s.RecvMsg(&out); err != nil || string(out) != string(b) {
						t.Fatalf("message %d: got %q, %v", i, out, err)
					}
				}
				s.CloseSend()
				var out []byte
				if err := s.RecvMsg(&out); err != io.EOF {
					t.Fatalf("after the last: %v, want the call's end", err)
				}
			})
			t.Run("trailers-only error", func(t *testing.T) {
				var in, out []byte
				err := cc.Invoke(ctx, "/test.Echo/Fail", &in, &out)
				if st := status.Convert(err); st.Code() != codes.NotFound || st.Message() != "no such thing" {
					t.Fatalf("got %v, want NotFound: no such thing", err)
				}
			})
			t.Run("cancelled", func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				s, err := cc.NewStream(cctx, &grpc.StreamDesc{ServerStreams: true}, "/test.Echo/Hang")
				if err != nil {
					t.Fatal(err)
				}
				b := []byte("x")
				s.SendMsg(&b)
				s.CloseSend()
				var out []byte
				if err := s.RecvMsg(&out); err != nil {
					t.Fatal(err)
				}
				<-svc.hang
				cancel()
				// The client's reset reaches the upstream: its call ends.
				if err := <-svc.hung; !errors.Is(err, context.Canceled) {
					t.Fatalf("the upstream's call ended with %v, want it cancelled", err)
				}
			})
			t.Run("upstream dies mid-stream", func(t *testing.T) {
				s, err := cc.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, "/test.Echo/Hang")
				if err != nil {
					t.Fatal(err)
				}
				b := []byte("x")
				s.SendMsg(&b)
				s.CloseSend()
				var out []byte
				if err := s.RecvMsg(&out); err != nil {
					t.Fatal(err)
				}
				<-svc.hang
				upSrv.Stop() // every connection closed at once
				<-svc.hung
				err = s.RecvMsg(&out)
				if st := status.Convert(err); err == io.EOF || st.Code() != codes.Unavailable {
					t.Fatalf("got %v, want UNAVAILABLE, never a clean end", err)
				}
			})
		})
	}
}

// A call no upstream answers gets UNAVAILABLE with the proxy's reason.
func TestGRPCUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	cc := grpcFront(t, Options{Upstreams: []string{"http://" + addr}, Transport: TransportH2C, Retries: -1})
	in, out := []byte("ping"), []byte(nil)
	err = cc.Invoke(context.Background(), "/test.Echo/Unary", &in, &out)
	if st := status.Convert(err); st.Code() != codes.Unavailable || !strings.Contains(st.Message(), "sluice: upstream unreachable") {
		t.Fatalf("got %v, want UNAVAILABLE naming the unreachable upstream", err)
	}
}
