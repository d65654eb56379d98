package translate_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/gateway/translate"
	"github.com/sluice-server/sluice/sluicetest"
)

const controllerName = "sluice-server.dev/gateway-controller"

var opts = translate.Options{
	ControllerName: controllerName,
	AddressPool:    netip.MustParsePrefix("10.245.0.0/24"),
}

// base holds the objects of the conformance suite's base manifests that
// the tests use: the class, three Gateways with the three allowedRoutes
// namespace policies, and their namespaces.
const base = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: sluice}
spec: {controllerName: sluice-server.dev/gateway-controller}
---
apiVersion: v1
kind: Namespace
metadata: {name: infra}
---
apiVersion: v1
kind: Namespace
metadata: {name: app, labels: {backend: "yes"}}
---
apiVersion: v1
kind: Namespace
metadata: {name: web}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: same-namespace, namespace: infra, creationTimestamp: "2026-01-01T00:00:00Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: Same}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: all-namespaces, namespace: infra, creationTimestamp: "2026-01-01T00:00:01Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: http, port: 80, protocol: HTTP, allowedRoutes: {namespaces: {from: All}}}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: backend-namespaces, namespace: infra, creationTimestamp: "2026-01-01T00:00:02Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - name: http
      port: 80
      protocol: HTTP
      allowedRoutes: {namespaces: {from: Selector, selector: {matchLabels: {backend: "yes"}}}}
`

// echo is what a test backend answers: who it is and what it was sent.
type echo struct {
	Backend string      `json:"backend"`
	Method  string      `json:"method"`
	Path    string      `json:"path"`
	Host    string      `json:"host"`
	Header  http.Header `json:"header"`
}

var nextIP = 10

// backends starts n backends for each "ns/name" (n after a "*", else 1),
// each on an address of its own on 127.0.0.0/8 and all on one port, and
// returns the Services and EndpointSlices that name them (port 8080 of
// the Service, to the backends' port).
func backends(t *testing.T, specs ...string) []any {
	t.Helper()
	var objs []any
	for _, spec := range specs {
		spec, count, _ := strings.Cut(spec, "*")
		n := 1
		if count != "" {
			n, _ = strconv.Atoi(count)
		}
		ns, name, _ := strings.Cut(spec, "/")
		var ips []string
		port := 0
		for i := range n {
			ip := fmt.Sprintf("127.0.0.%d", nextIP)
			nextIP++
			ln, err := net.Listen("tcp", net.JoinHostPort(ip, strconv.Itoa(port)))
			if err != nil {
				t.Fatal(err)
			}
			port = ln.Addr().(*net.TCPAddr).Port
			id := fmt.Sprintf("%s/%s-%d", ns, name, i)
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(echo{Backend: id, Method: r.Method, Path: r.URL.RequestURI(), Host: r.Host, Header: r.Header})
			})}
			go srv.Serve(ln)
			t.Cleanup(func() { srv.Close() })
			ips = append(ips, ip)
		}
		objs = append(objs, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}, ClusterIP: "10.96.0.1"},
		}, endpointSlice(ns, name, port, ips))
	}
	return objs
}

func endpointSlice(ns, name string, port int, ips []string) *discoveryv1.EndpointSlice {
	eps := make([]discoveryv1.Endpoint, len(ips))
	for i, ip := range ips {
		eps[i] = discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr(true)}}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{discoveryv1.LabelServiceName: name}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(port)), Protocol: ptr(corev1.ProtocolTCP)}},
		Endpoints:   eps,
	}
}

func ptr[T any](v T) *T { return &v }

// snapshot decodes base and manifests and adds objs.
func snapshot(t testing.TB, manifests string, objs ...any) *translate.Snapshot {
	t.Helper()
	snap, err := translate.Decode([]byte(base + "\n---\n" + manifests))
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch o := o.(type) {
		case *corev1.Service:
			snap.Services = append(snap.Services, o)
		case *discoveryv1.EndpointSlice:
			snap.EndpointSlices = append(snap.EndpointSlices, o)
		}
	}
	return snap
}

// load writes the result's config and files to a directory and loads
// the config as sluice does, failing the test if it does not load.
func load(t testing.TB, res *translate.Result) *config.Config {
	t.Helper()
	dir := t.TempDir()
	for name, data := range res.Files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := new(config.Loader).Parse(filepath.Join(dir, "sluice.yaml"), res.Config)
	if err != nil {
		t.Fatalf("the config does not load: %v\n%s", err, res.Config)
	}
	t.Cleanup(func() { cfg.Close() })
	return cfg
}

// gatewayAddr is a Gateway listener's address and port in a translated
// config: in its listen entries and its routes' local conditions.
var gatewayAddr = regexp.MustCompile(`10\.245\.[0-9]+\.[0-9]+:[0-9]+`)

// nextServeIP numbers the loopback addresses serve listens on.
var nextServeIP = 1

// serve loads the result's config (as load does) and serves it on a
// loopback address of its own for each Gateway listener the config
// names, the listener's address and port replaced by that one in the
// config's local conditions, so that each Gateway listener's routes
// answer there alone, as the Gateway's address would. The listeners take
// HTTP/2 with prior knowledge (h2c) beside HTTP/1.1, as the config's do. It returns the
// URLs by the listener's address and port ("10.245.0.1:80").
func serve(t *testing.T, res *translate.Result) map[string]string {
	t.Helper()
	load(t, res)
	var h atomic.Pointer[engine.Handler]
	handler := engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) { (*h.Load()).Serve(w, r) })
	urls, to := map[string]string{}, map[string]string{}
	for _, a := range gatewayAddr.FindAllString(string(res.Config), -1) {
		if urls[a] != "" {
			continue
		}
		srv := sluicetest.NewServer(t, handler, sluicetest.Listen("tcp", fmt.Sprintf("127.1.%d.%d:0", nextServeIP/250, nextServeIP%250+1)), sluicetest.HTTP2())
		nextServeIP++
		urls[a], to[a] = srv.URL, srv.Addr
	}
	local := *res
	local.Config = []byte(gatewayAddr.ReplaceAllStringFunc(string(res.Config), func(a string) string { return to[a] }))
	hd := load(t, &local).Handler()
	h.Store(&hd)
	return urls
}

// request is one request a test sends through the translated config, and
// what it should get.
type request struct {
	gw                 string // the Gateway listener's address and port: 10.245.0.1:80 (same-namespace) when ""
	method, host, path string
	header             map[string]string
	status             int    // 200 when 0
	backend            string // "ns/name": the backend that must answer (any of its endpoints)
	sentPath           string // the path (and query) the backend must be sent
	sentHeader         map[string]string
	location           string // the Location of a redirect
	respHeader         map[string]string
}

var client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// send sends req to the Gateway listener it names, among urls (see
// serve), and checks what it gets.
func send(t *testing.T, urls map[string]string, req request) {
	t.Helper()
	gw := cmpOr(req.gw, "10.245.0.1:80")
	base := urls[gw]
	if base == "" {
		t.Fatalf("no Gateway listener %s in the config", gw)
	}
	r, err := http.NewRequest(cmpOr(req.method, "GET"), base+req.path, nil)
	if err != nil {
		t.Fatal(err)
	}
	r.Host = cmpOr(req.host, "example.com")
	for k, v := range req.header {
		r.Header.Set(k, v)
	}
	resp, err := client.Do(r)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	what := fmt.Sprintf("%s %s%s (at %s)", r.Method, r.Host, req.path, gw)
	want := req.status
	if want == 0 {
		want = 200
	}
	if resp.StatusCode != want {
		t.Errorf("%s: status %d, want %d (%s)", what, resp.StatusCode, want, body)
		return
	}
	if req.location != "" && resp.Header.Get("Location") != req.location {
		t.Errorf("%s: Location %q, want %q", what, resp.Header.Get("Location"), req.location)
	}
	for k, v := range req.respHeader {
		if got := strings.Join(resp.Header.Values(k), ","); got != v {
			t.Errorf("%s: response %s %q, want %q", what, k, got, v)
		}
	}
	if req.backend == "" {
		return
	}
	var e echo
	if err := json.Unmarshal(body, &e); err != nil {
		t.Errorf("%s: not a backend's answer: %s", what, body)
		return
	}
	if !strings.HasPrefix(e.Backend, req.backend+"-") {
		t.Errorf("%s: answered by %s, want %s", what, e.Backend, req.backend)
	}
	if req.sentPath != "" && e.Path != req.sentPath {
		t.Errorf("%s: backend sent %s, want %s", what, e.Path, req.sentPath)
	}
	for k, v := range req.sentHeader {
		got := strings.Join(e.Header.Values(k), ",")
		if k == "Host" {
			got = e.Host
		}
		if got != v {
			t.Errorf("%s: backend sent %s %q, want %q", what, k, got, v)
		}
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// cond is a status condition a test expects of an object.
type cond struct {
	kind, name string // kind Gateway, HTTPRoute, GRPCRoute or GatewayClass; name ns/name
	parent     int    // HTTPRoute: the index of the parent status; Gateway: the listener's index plus 1 (0 for the Gateway)
	typ        string
	status     bool
	reason     string
}

func checkCond(t *testing.T, res *translate.Result, c cond) {
	t.Helper()
	ns, name, _ := strings.Cut(c.name, "/")
	key := types.NamespacedName{Namespace: ns, Name: name}
	var conds []metav1.Condition
	switch c.kind {
	case "GatewayClass":
		conds = res.GatewayClasses[c.name].Conditions
	case "Gateway":
		st, ok := res.Gateways[key]
		if !ok {
			t.Errorf("no status for Gateway %s", c.name)
			return
		}
		conds = st.Conditions
		if c.parent > 0 {
			if c.parent > len(st.Listeners) {
				t.Errorf("Gateway %s has %d listeners' status", c.name, len(st.Listeners))
				return
			}
			conds = st.Listeners[c.parent-1].Conditions
		}
	case "HTTPRoute":
		st, ok := res.HTTPRoutes[key]
		if !ok || c.parent >= len(st.Parents) {
			t.Errorf("no status for parent %d of HTTPRoute %s", c.parent, c.name)
			return
		}
		conds = st.Parents[c.parent].Conditions
	case "GRPCRoute":
		st, ok := res.GRPCRoutes[key]
		if !ok || c.parent >= len(st.Parents) {
			t.Errorf("no status for parent %d of GRPCRoute %s", c.parent, c.name)
			return
		}
		conds = st.Parents[c.parent].Conditions
	}
	for _, x := range conds {
		if x.Type == c.typ {
			if (x.Status == metav1.ConditionTrue) != c.status || x.Reason != c.reason {
				t.Errorf("%s %s [%d] %s = %s %s (%s), want %v %s", c.kind, c.name, c.parent, c.typ, x.Status, x.Reason, x.Message, c.status, c.reason)
			}
			return
		}
	}
	t.Errorf("%s %s [%d] has no %s condition: %+v", c.kind, c.name, c.parent, c.typ, conds)
}

// key is the name of an object written ns/name.
func key(s string) types.NamespacedName {
	ns, name, _ := strings.Cut(s, "/")
	return types.NamespacedName{Namespace: ns, Name: name}
}
