package translate_test

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-server/sluice/gateway/translate"
)

// grpcBackends starts a gRPC server (the health service) for each
// "ns/name", on an address of its own, and returns the Services and
// EndpointSlices that name them. Each answers with its name in the
// response metadata "backend", and the request metadata "x-added" it got
// in "got-x-added".
func grpcBackends(t *testing.T, names ...string) []any {
	t.Helper()
	var objs []any
	for _, spec := range names {
		ns, name, _ := strings.Cut(spec, "/")
		ip := fmt.Sprintf("127.0.0.%d", nextIP)
		nextIP++
		ln, err := net.Listen("tcp", ip+":0")
		if err != nil {
			t.Fatal(err)
		}
		id := spec
		srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(ctx)
			grpc.SetHeader(ctx, metadata.Pairs("backend", id, "got-x-added", strings.Join(md.Get("x-added"), ",")))
			return h(ctx, req)
		}))
		hs := health.NewServer()
		hs.SetServingStatus("who", healthpb.HealthCheckResponse_SERVING)
		healthpb.RegisterHealthServer(srv, hs)
		go srv.Serve(ln)
		t.Cleanup(srv.Stop)
		objs = append(objs, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}, ClusterIP: "10.96.0.1"},
		}, endpointSlice(ns, name, ln.Addr().(*net.TCPAddr).Port, []string{ip}))
	}
	return objs
}

func grpcRoute(ns, name, parents, spec string) string {
	return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: GRPCRoute
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: %s
%s
`, name, ns, parents, spec)
}

// grpcCall is one call a test makes through the translated config with
// grpc-go, and what it should get.
type grpcCall struct {
	gw        string // the Gateway listener: 10.245.0.1:80 when ""
	host      string // the authority: grpc.example.com when ""
	list      bool   // Health/List, else Health/Check
	md        map[string]string
	code      codes.Code
	backend   string // "ns/name" that must answer
	gotAdded  string // the x-added the backend must get
	respExtra map[string]string
}

func callGRPC(t *testing.T, urls map[string]string, c grpcCall) {
	t.Helper()
	u, err := url.Parse(urls[cmpOr(c.gw, "10.245.0.1:80")])
	if err != nil || u.Host == "" {
		t.Fatalf("no Gateway listener %s in the config", c.gw)
	}
	conn, err := grpc.NewClient("passthrough:///"+u.Host, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithAuthority(cmpOr(c.host, "grpc.example.com")))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx := context.Background()
	for k, v := range c.md {
		ctx = metadata.AppendToOutgoingContext(ctx, k, v)
	}
	var hdr metadata.MD
	cl := healthpb.NewHealthClient(conn)
	what := fmt.Sprintf("Check %+v", c)
	if c.list {
		_, err = cl.List(ctx, &healthpb.HealthListRequest{}, grpc.Header(&hdr))
	} else {
		_, err = cl.Check(ctx, &healthpb.HealthCheckRequest{Service: "who"}, grpc.Header(&hdr))
	}
	if got := status.Code(err); got != c.code {
		t.Errorf("%s: code %v (%v), want %v", what, got, err, c.code)
		return
	}
	if c.backend != "" && strings.Join(hdr.Get("backend"), ",") != c.backend {
		t.Errorf("%s: answered by %q, want %s", what, hdr.Get("backend"), c.backend)
	}
	if c.gotAdded != "" && strings.Join(hdr.Get("got-x-added"), ",") != c.gotAdded {
		t.Errorf("%s: backend got x-added %q, want %q", what, hdr.Get("got-x-added"), c.gotAdded)
	}
	for k, v := range c.respExtra {
		if got := strings.Join(hdr.Get(k), ","); got != v {
			t.Errorf("%s: response %s %q, want %q", what, k, got, v)
		}
	}
}

// GRPCRoutes are served with grpc-go clients and servers at both ends:
// method and header matches, header filters, precedence, and status.
func TestTranslateGRPCRoute(t *testing.T) {
	cases := []struct {
		name      string
		manifests string
		backends  []string
		calls     []grpcCall
		conds     []cond
		check     func(*testing.T, *translate.Result)
	}{
		{
			name: "method and header matches",
			manifests: grpcRoute("infra", "health", sameNS, `
  hostnames: [grpc.example.com]
  rules:
    - matches: [{method: {service: grpc.health.v1.Health, method: Check}}]
      backendRefs: [{name: check, port: 8080}]
    - matches: [{method: {service: grpc.health.v1.Health, method: Check}, headers: [{name: x-tenant, value: b}]}]
      backendRefs: [{name: tenant-b, port: 8080}]
    - matches: [{method: {service: grpc.health.v1.Health}}]
      backendRefs: [{name: rest, port: 8080}]`),
			backends: []string{"infra/check", "infra/tenant-b", "infra/rest"},
			calls: []grpcCall{
				{backend: "infra/check"},
				{md: map[string]string{"x-tenant": "b"}, backend: "infra/tenant-b"},
				{md: map[string]string{"x-tenant": "c"}, backend: "infra/check"},
				{list: true, backend: "infra/rest"},
				{host: "other.example.com", code: codes.Unimplemented}, // Sluice's 404
			},
			conds: []cond{
				{kind: "GRPCRoute", name: "infra/health", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "GRPCRoute", name: "infra/health", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
			},
		},
		{
			name: "regular expressions and filters",
			manifests: grpcRoute("infra", "re", sameNS, `
  rules:
    - matches: [{method: {type: RegularExpression, service: 'grpc\.health\..*', method: 'Li.t'}}]
      filters:
        - {type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x-added, value: "yes"}]}}
        - {type: ResponseHeaderModifier, responseHeaderModifier: {add: [{name: x-resp, value: "1"}]}}
      backendRefs: [{name: list, port: 8080}]
    - matches: [{method: {method: Check}, headers: [{type: RegularExpression, name: x-v, value: "v[0-9]+"}]}]
      backendRefs: [{name: versioned, port: 8080}]`),
			backends: []string{"infra/list", "infra/versioned"},
			calls: []grpcCall{
				{list: true, backend: "infra/list", gotAdded: "yes", respExtra: map[string]string{"x-resp": "1"}},
				{md: map[string]string{"x-v": "v12"}, backend: "infra/versioned", gotAdded: ""},
				{md: map[string]string{"x-v": "w"}, code: codes.Unimplemented},
			},
		},
		{
			name: "an HTTPRoute and a GRPCRoute on one hostname", // of equal age: the first by namespace/name wins
			manifests: route("infra", "a-http", sameNS, `
  hostnames: [a.example.com, "*.shared.example"]
  rules: [{backendRefs: [{name: svc, port: 8080}]}]`) + grpcRoute("infra", "b-grpc", sameNS, `
  hostnames: [b.shared.example]
  rules: [{backendRefs: [{name: svc, port: 8080}]}]`) + grpcRoute("infra", "apart", sameNS, `
  hostnames: [c.example.com]
  rules: [{backendRefs: [{name: svc, port: 8080}]}]`),
			backends: []string{"infra/svc"},
			calls:    []grpcCall{{host: "c.example.com", backend: "infra/svc"}},
			conds: []cond{
				{kind: "HTTPRoute", name: "infra/a-http", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "GRPCRoute", name: "infra/b-grpc", typ: "Accepted", status: false, reason: "NotAllowedByListeners"},
				{kind: "GRPCRoute", name: "infra/apart", typ: "Accepted", status: true, reason: "Accepted"},
			},
		},
		{
			name: "kinds, grants and bad matches",
			manifests: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: http-only, namespace: infra, creationTimestamp: "2026-01-01T00:00:03Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: http, port: 80, protocol: HTTP, allowedRoutes: {kinds: [{kind: HTTPRoute}]}}
` + grpcRoute("infra", "refused", `[{name: http-only}]`, `
  rules: [{backendRefs: [{name: svc, port: 8080}]}]`) +
				grpcRoute("web", "cross", `[{name: all-namespaces, namespace: infra}]`, `
  rules: [{backendRefs: [{name: svc, namespace: infra, port: 8080}]}]`) +
				grpcRoute("app", "granted", `[{name: all-namespaces, namespace: infra}]`, `
  hostnames: [granted.example.com]
  rules: [{backendRefs: [{name: svc, namespace: infra, port: 8080}]}]`) + `
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: grpc-from-app, namespace: infra}
spec:
  from: [{group: gateway.networking.k8s.io, kind: GRPCRoute, namespace: app}]
  to: [{group: "", kind: Service}]
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: http-from-web, namespace: infra}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: web}]
  to: [{group: "", kind: Service}]
` +
				grpcRoute("infra", "badre", sameNS, `
  rules: [{matches: [{method: {type: RegularExpression, service: "(("}}], backendRefs: [{name: svc, port: 8080}]}]`) +
				grpcRoute("infra", "mirror", sameNS, `
  rules:
    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: svc, port: 8080}}}]
      backendRefs: [{name: svc, port: 8080}]`),
			backends: []string{"infra/svc"},
			calls: []grpcCall{
				{gw: "10.245.0.2:80", code: codes.Unknown}, // cross: a grant for HTTPRoutes alone, the spec's 500 (grpc-go: Unknown)
				{gw: "10.245.0.2:80", host: "granted.example.com", backend: "infra/svc"},
			},
			conds: []cond{
				{kind: "GRPCRoute", name: "infra/refused", typ: "Accepted", status: false, reason: "NotAllowedByListeners"},
				{kind: "GRPCRoute", name: "web/cross", typ: "ResolvedRefs", status: false, reason: "RefNotPermitted"},
				{kind: "GRPCRoute", name: "app/granted", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
				{kind: "GRPCRoute", name: "infra/badre", typ: "Accepted", status: false, reason: "UnsupportedValue"},
				{kind: "GRPCRoute", name: "infra/mirror", typ: "Accepted", status: false, reason: "UnsupportedValue"},
			},
			check: func(t *testing.T, res *translate.Result) {
				if len(res.HTTPRoutes) != 0 {
					t.Errorf("GRPCRoutes' status written as HTTPRoutes': %v", res.HTTPRoutes)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := snapshot(t, c.manifests, grpcBackends(t, c.backends...)...)
			res := translate.Translate(snap, opts)
			if !strings.Contains(string(res.Config), "h2c: true") {
				t.Errorf("no h2c listener in the config")
			}
			grpcSets := 0 // the upstream sets of GRPCRoutes: named ns.name.rN.M
			for set := range res.Upstreams {
				for k := range res.GRPCRoutes {
					if strings.HasPrefix(set, k.Namespace+"."+k.Name+".r") {
						grpcSets++
					}
				}
			}
			if n := strings.Count(string(res.Config), "transport: h2c"); n != grpcSets {
				t.Errorf("%d proxies with transport h2c, want one for each of the GRPCRoutes' %d upstream sets", n, grpcSets)
			}
			urls := serve(t, res)
			for _, x := range c.calls {
				callGRPC(t, urls, x)
			}
			for _, x := range c.conds {
				checkCond(t, res, x)
			}
			if c.check != nil {
				c.check(t, res)
			}
			if t.Failed() {
				t.Logf("config:\n%s", res.Config)
			}
		})
	}
}
