package translate_test

import (
	"fmt"
	"maps"
	"net/netip"
	"os"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sluice-server/sluice/gateway/translate"
	"github.com/sluice-server/sluice/sluicetest"
)

// route writes an HTTPRoute manifest: its metadata and parentRefs line,
// then the spec's other keys.
func route(ns, name, parents, spec string) string {
	return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: %s, namespace: %s}
spec:
  parentRefs: %s
%s
`, name, ns, parents, spec)
}

const sameNS = `[{name: same-namespace}]`

// hosts is the address and port of the Gateway hosts, the fourth oldest.
const hosts = "10.245.0.4:80"

type tcase struct {
	name      string
	manifests string
	backends  []string
	requests  []request
	conds     []cond
	check     func(t *testing.T, res *translate.Result)
}

// isoRoute is a route of the Gateway iso's listener, of prefix /NAME
// and the hostnames that intersect every listener's.
func isoRoute(listener string) string {
	return route("infra", "to-"+listener, "[{name: iso, sectionName: "+listener+"}]", `
  hostnames: [bar.com, "*.example.com", "*.foo.example.com", abc.foo.example.com]
  rules: [{matches: [{path: {type: PathPrefix, value: /`+listener+`}}], backendRefs: [{name: v1, port: 8080}]}]`)
}

// isoRequests are the requests of the conformance suite's listener
// isolation test: a host's listener alone answers it, the listener of
// the most specific hostname that covers it.
func isoRequests() []request {
	var out []request
	for host, listener := range map[string]string{"bar.com": "empty", "bar.example.com": "wild", "bar.foo.example.com": "wild-foo", "abc.foo.example.com": "abc"} {
		for _, l := range []string{"empty", "wild", "wild-foo", "abc"} {
			r := request{gw: "10.245.0.4:80", host: host, path: "/" + l, status: 404}
			if l == listener {
				r.status, r.backend = 0, "infra/v1"
			}
			out = append(out, r)
		}
	}
	return out
}

// TestTranslate translates manifests modelled on the Gateway API
// conformance tests, loads the config as sluice does, serves it, and
// sends requests through it to real backends; and checks the status
// written for the objects.
func TestTranslate(t *testing.T) {
	cases := []tcase{
		{
			name:     "path matching",
			backends: []string{"infra/v1", "infra/v2", "infra/v3"},
			manifests: route("infra", "matching", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /v2/}}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{path: {type: Exact, value: /exact}}, {path: {type: Exact, value: /slash/}}]
      backendRefs: [{name: v3, port: 8080}]`),
			requests: []request{
				{path: "/", backend: "infra/v1"},
				{path: "/example?a=b", backend: "infra/v1", sentPath: "/example?a=b"},
				{path: "/v2", backend: "infra/v2"},
				{path: "/v2/", backend: "infra/v2"},
				{path: "/v2/example", backend: "infra/v2", sentPath: "/v2/example"},
				{path: "/v2example", backend: "infra/v1"},
				{path: "/exact", backend: "infra/v3"},
				{path: "/exact/", backend: "infra/v1"},
				{path: "/exact/x", backend: "infra/v1"},
				{path: "/slash/", backend: "infra/v3"},
				{path: "/slash", backend: "infra/v1"},
			},
			conds: []cond{
				{kind: "GatewayClass", name: "sluice", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "Gateway", name: "infra/same-namespace", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "Gateway", name: "infra/same-namespace", typ: "Programmed", status: true, reason: "Programmed"},
				{kind: "Gateway", name: "infra/same-namespace", parent: 1, typ: "Programmed", status: true, reason: "Programmed"},
				{kind: "HTTPRoute", name: "infra/matching", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "HTTPRoute", name: "infra/matching", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
			},
			check: func(t *testing.T, res *translate.Result) {
				if f := res.GatewayClasses["sluice"].SupportedFeatures; len(f) != len(translate.SupportedFeatures) || f[0].Name != "Gateway" {
					t.Errorf("the class's supportedFeatures %v, want %v", f, translate.SupportedFeatures)
				}
				st := res.Gateways[key("infra/same-namespace")]
				if len(st.Addresses) != 1 || st.Addresses[0].Value != "10.245.0.1" || st.Listeners[0].AttachedRoutes != 1 {
					t.Errorf("same-namespace: addresses %+v, attached routes %d; want 10.245.0.1 and 1", st.Addresses, st.Listeners[0].AttachedRoutes)
				}
				if a := res.Gateways[key("infra/backend-namespaces")].Addresses; len(a) != 1 || a[0].Value != "10.245.0.3" {
					t.Errorf("backend-namespaces: addresses %+v, want 10.245.0.3 (the third oldest)", a)
				}
				if !strings.Contains(string(res.Config), "10.245.0.2:80") {
					t.Errorf("no listener on 10.245.0.2:80 in\n%s", res.Config)
				}
			},
		},
		{
			name:     "header matching",
			backends: []string{"infra/v1", "infra/v2"},
			manifests: route("infra", "headers", sameNS, `
  rules:
    - matches: [{headers: [{name: version, value: one}]}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{headers: [{name: version, value: two}]}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{headers: [{name: version, value: two}, {name: color, value: orange}]}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{headers: [{name: color, value: blue}]}, {headers: [{name: color, value: green}]}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{headers: [{name: color, value: red}]}, {headers: [{name: color, value: yellow}]}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{headers: [{name: star, value: "*"}]}, {headers: [{name: rx, type: RegularExpression, value: "^a+$"}]}]
      backendRefs: [{name: v2, port: 8080}]`),
			requests: []request{
				{header: map[string]string{"Version": "one"}, backend: "infra/v1"},
				{header: map[string]string{"Version": "two"}, backend: "infra/v2"},
				{header: map[string]string{"Version": "two", "Color": "orange"}, backend: "infra/v1"},
				{header: map[string]string{"Version": "two", "Color": "blue"}, backend: "infra/v2"},
				{header: map[string]string{"Color": "blue"}, backend: "infra/v1"},
				{header: map[string]string{"Color": "green"}, backend: "infra/v1"},
				{header: map[string]string{"Color": "red"}, backend: "infra/v2"},
				{header: map[string]string{"Color": "yellow"}, backend: "infra/v2"},
				{header: map[string]string{"Star": "*"}, backend: "infra/v2"},
				{header: map[string]string{"Star": "x"}, status: 404},
				{header: map[string]string{"Rx": "aaa"}, backend: "infra/v2"},
				{header: map[string]string{"Rx": "aab"}, status: 404},
				{status: 404},
				{method: "POST", status: 404},
				{header: map[string]string{"Version": "three"}, status: 404},
			},
		},
		{
			name:     "methods, query and fallthrough",
			backends: []string{"infra/v1", "infra/v2", "infra/v3"},
			manifests: route("infra", "methods", sameNS, `
  rules:
    - matches: [{method: POST}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{method: GET}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /v2}, headers: [{name: x, value: "1"}]}]
      backendRefs: [{name: v3, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /p}, method: PUT}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /p}, headers: [{name: x, value: "1"}]}]
      backendRefs: [{name: v3, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /q}, queryParams: [{name: animal, value: whale}]}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /q}, queryParams: [{name: animal, value: dolphin}]}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /q}, queryParams: [{name: animal, value: dolphin}, {name: color, value: blue}]}]
      backendRefs: [{name: v3, port: 8080}]`),
			requests: []request{
				{method: "POST", backend: "infra/v1"},
				{backend: "infra/v2"},
				{method: "PATCH", status: 404},
				{path: "/v2/x", header: map[string]string{"X": "1"}, backend: "infra/v3"},
				{path: "/v2/x", backend: "infra/v2"},                 // falls through to GET /
				{method: "POST", path: "/v2/x", backend: "infra/v1"}, // and to POST /
				{method: "DELETE", path: "/v2/x", status: 404},
				{method: "PUT", path: "/p", header: map[string]string{"X": "1"}, backend: "infra/v1"}, // a method before a header
				{method: "POST", path: "/p", header: map[string]string{"X": "1"}, backend: "infra/v3"},
				{path: "/q?animal=whale", backend: "infra/v1"},
				{path: "/q?animal=dolphin", backend: "infra/v2"},
				{path: "/q?animal=dolphin&color=blue", backend: "infra/v3"},
				{path: "/q?color=blue&animal=dolphin", backend: "infra/v3"},
				{path: "/q?animal=shark", backend: "infra/v2"}, // GET /
			},
		},
		{
			name:     "hostnames across routes and listeners",
			backends: []string{"infra/v1", "infra/v2", "infra/v3"},
			manifests: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: hosts, namespace: infra, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: listener-1, port: 80, protocol: HTTP, hostname: bar.com}
    - {name: listener-2, port: 80, protocol: HTTP, hostname: foo.bar.com}
    - {name: listener-3, port: 80, protocol: HTTP, hostname: "*.bar.com"}
    - {name: listener-4, port: 80, protocol: HTTP, hostname: "*.foo.com"}
` + route("infra", "r1", `[{name: hosts, sectionName: listener-1}]`, `
  rules: [{backendRefs: [{name: v1, port: 8080}]}]`) +
				route("infra", "r2", `[{name: hosts, sectionName: listener-2}]`, `
  rules: [{backendRefs: [{name: v2, port: 8080}]}]`) +
				route("infra", "r3", `[{name: hosts, sectionName: listener-3}, {name: hosts, sectionName: listener-4}]`, `
  rules: [{backendRefs: [{name: v3, port: 8080}]}]`) +
				route("infra", "r4", `[{name: hosts, sectionName: listener-1}]`, `
  hostnames: [nope.org]
  rules: [{backendRefs: [{name: v1, port: 8080}]}]`) +
				route("infra", "r5", `[{name: hosts, sectionName: listener-3}]`, `
  hostnames: [special.bar.com, other.org]
  rules: [{matches: [{path: {type: PathPrefix, value: /special}}], backendRefs: [{name: v1, port: 8080}]}]`) +
				route("infra", "r6", `[{name: hosts, sectionName: listener-9}, {name: hosts, port: 8080}]`, `
  rules: [{backendRefs: [{name: v1, port: 8080}]}]`) +
				route("infra", "across1", sameNS, `
  hostnames: [example.com, example.net]
  rules: [{backendRefs: [{name: v1, port: 8080}]}]`) +
				route("infra", "across2", sameNS, `
  hostnames: [example.com]
  rules:
    - matches: [{path: {type: PathPrefix, value: /v2}}, {headers: [{name: version, value: two}]}]
      backendRefs: [{name: v2, port: 8080}]`),
			requests: []request{
				{gw: hosts, host: "bar.com", backend: "infra/v1"},
				{gw: hosts, host: "foo.bar.com", backend: "infra/v2"},
				{gw: hosts, host: "baz.bar.com", backend: "infra/v3"},
				{gw: hosts, host: "boo.foo.com", backend: "infra/v3"},
				{gw: hosts, host: "multiple.prefixes.bar.com", backend: "infra/v3"},
				{gw: hosts, host: "special.bar.com", path: "/special/x", backend: "infra/v1"},
				{gw: hosts, host: "special.bar.com", path: "/x", backend: "infra/v3"}, // falls through to *.bar.com's route
				{gw: hosts, host: "foo.com", status: 404},
				{gw: hosts, host: "nope.org", status: 404},
				{gw: hosts, host: "other.org", status: 404},
				{host: "example.com", backend: "infra/v1"},
				{host: "example.com", path: "/v2", backend: "infra/v2"},
				{host: "example.com", header: map[string]string{"Version": "two"}, backend: "infra/v2"},
				{host: "example.net", path: "/v2", backend: "infra/v1"},
				{host: "example.org", status: 404},
			},
			conds: []cond{
				{kind: "HTTPRoute", name: "infra/r4", typ: "Accepted", status: false, reason: "NoMatchingListenerHostname"},
				{kind: "HTTPRoute", name: "infra/r5", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "HTTPRoute", name: "infra/r6", parent: 0, typ: "Accepted", status: false, reason: "NoMatchingParent"},
				{kind: "HTTPRoute", name: "infra/r6", parent: 1, typ: "Accepted", status: false, reason: "NoMatchingParent"},
				{kind: "Gateway", name: "infra/hosts", parent: 1, typ: "Conflicted", status: false, reason: "NoConflicts"},
			},
			check: func(t *testing.T, res *translate.Result) {
				st := res.Gateways[key("infra/hosts")]
				var got []int32
				for _, l := range st.Listeners {
					got = append(got, l.AttachedRoutes)
				}
				if !slices.Equal(got, []int32{1, 1, 2, 1}) {
					t.Errorf("attached routes per listener %v, want [1 1 2 1]", got)
				}
			},
		},
		{
			name:     "Gateways and ports apart",
			backends: []string{"infra/v1", "infra/v2", "infra/v3"},
			manifests: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: two-ports, namespace: infra, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: a, port: 80, protocol: HTTP}
    - {name: b, port: 8080, protocol: HTTP}
` + route("infra", "on-a", `[{name: two-ports, sectionName: a}]`, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /same}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /redirect}}]
      filters: [{type: RequestRedirect, requestRedirect: {scheme: https}}]
    - backendRefs: [{name: v1, port: 8080}]`) +
				route("infra", "on-b", `[{name: two-ports, port: 8080}]`, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /same}}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /redirect}}]
      filters: [{type: RequestRedirect, requestRedirect: {port: 8443}}]`) +
				route("infra", "site", sameNS, `
  hostnames: [site.example]
  rules:
    - matches: [{path: {type: PathPrefix, value: /x}}]
      backendRefs: [{name: v3, port: 8080}]`) +
				route("infra", "get", sameNS, `
  rules:
    - matches: [{path: {type: Exact, value: /m}, method: GET}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: Exact, value: /add}}]
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {add: [{name: X-Add, value: added}, {name: Host, value: added.example}]}}]
      backendRefs: [{name: v2, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /x/deeper}}]
      backendRefs: [{name: v2, port: 8080}]`),
			requests: []request{
				{gw: "10.245.0.4:80", path: "/same", backend: "infra/v1"},
				{gw: "10.245.0.4:8080", path: "/same", backend: "infra/v2"},
				{path: "/same", status: 404}, // same-namespace has no such route
				{gw: "10.245.0.4:80", host: "example.com:8888", path: "/redirect?a", status: 302, location: "https://example.com/redirect?a"},
				{gw: "10.245.0.4:8080", host: "example.com:8080", path: "/redirect", status: 302, location: "http://example.com:8443/redirect"},
				{gw: "10.245.0.4:8080", path: "/other", status: 404},
				// A site of one Gateway leaves another's routes for any host.
				{gw: "10.245.0.4:80", host: "site.example", path: "/x", backend: "infra/v1"},
				{host: "site.example", path: "/x", backend: "infra/v3"},
				{host: "site.example", path: "/y", status: 404},
				// A hostname's routes before wider ones', then the wider ones'.
				{host: "site.example", path: "/x/deeper", backend: "infra/v3"},
				{path: "/x/deeper", backend: "infra/v2"},
				{host: "site.example", path: "/m", backend: "infra/v1"},
				// A method match is exact: HEAD is not GET.
				{path: "/m", backend: "infra/v1"},
				{method: "HEAD", path: "/m", status: 404},
				{method: "POST", path: "/m", status: 404},
				{gw: "10.245.0.4:80", method: "HEAD", path: "/m"},
				// add appends to what the client sent.
				{path: "/add", header: map[string]string{"X-Add": "client"}, backend: "infra/v2",
					sentHeader: map[string]string{"X-Add": "client,added", "Host": "added.example"}},
			},
			conds: []cond{
				{kind: "HTTPRoute", name: "infra/on-b", typ: "Accepted", status: true, reason: "Accepted"},
			},
			check: func(t *testing.T, res *translate.Result) {
				var got []int32
				for _, l := range res.Gateways[key("infra/two-ports")].Listeners {
					got = append(got, l.AttachedRoutes)
				}
				if !slices.Equal(got, []int32{1, 1}) {
					t.Errorf("attached routes per listener %v, want [1 1]", got)
				}
			},
		},
		{
			name:     "listener isolation",
			backends: []string{"infra/v1"},
			manifests: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: iso, namespace: infra, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: empty, port: 80, protocol: HTTP}
    - {name: wild, port: 80, protocol: HTTP, hostname: "*.example.com"}
    - {name: wild-foo, port: 80, protocol: HTTP, hostname: "*.foo.example.com"}
    - {name: abc, port: 80, protocol: HTTP, hostname: abc.foo.example.com}
` + isoRoute("empty") + isoRoute("wild") + isoRoute("wild-foo") + isoRoute("abc"),
			requests: isoRequests(),
		},
		{
			name:     "header modifiers",
			backends: []string{"infra/v1"},
			manifests: route("infra", "mod", sameNS, `
  rules:
    - filters:
        - type: RequestHeaderModifier
          requestHeaderModifier:
            set: [{name: X-Header-Set, value: set-overwrites-values}]
            add: [{name: X-Header-Add, value: add-appends-values}]
            remove: [X-Header-Remove]
        - type: ResponseHeaderModifier
          responseHeaderModifier:
            set: [{name: X-Resp-Set, value: "1"}]
            add: [{name: X-Resp-Add, value: "2"}]
            remove: [Content-Type]
      backendRefs: [{name: v1, port: 8080}]`),
			requests: []request{
				{header: map[string]string{"X-Header-Set": "original", "X-Header-Remove": "gone"}, backend: "infra/v1",
					sentHeader: map[string]string{"X-Header-Set": "set-overwrites-values", "X-Header-Add": "add-appends-values", "X-Header-Remove": ""},
					respHeader: map[string]string{"X-Resp-Set": "1", "X-Resp-Add": "2", "Content-Type": ""}},
			},
		},
		{
			name: "redirects",
			manifests: route("infra", "redirect", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /host}}]
      filters: [{type: RequestRedirect, requestRedirect: {hostname: example.org}}]
    - matches: [{path: {type: PathPrefix, value: /scheme}}]
      filters: [{type: RequestRedirect, requestRedirect: {scheme: https, statusCode: 301}}]
    - matches: [{path: {type: PathPrefix, value: /port}}]
      filters: [{type: RequestRedirect, requestRedirect: {port: 8443, hostname: example.org}}]
    - matches: [{path: {type: PathPrefix, value: /full}}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplaceFullPath, replaceFullPath: /full-path-replacement}}}]
    - matches: [{path: {type: PathPrefix, value: /original-prefix}}]
      filters: [{type: RequestRedirect, requestRedirect: {statusCode: 308, path: {type: ReplacePrefixMatch, replacePrefixMatch: /replacement-prefix}}}]`),
			requests: []request{
				{path: "/host/a?q=1", status: 302, location: "http://example.org/host/a?q=1"},
				{path: "/scheme", status: 301, location: "https://example.com/scheme"},
				{path: "/port", status: 302, location: "http://example.org:8443/port"},
				{path: "/full/path/original", status: 302, location: "http://example.com/full-path-replacement"},
				{path: "/original-prefix/lemon", status: 308, location: "http://example.com/replacement-prefix/lemon"},
				{path: "/original-prefix", status: 308, location: "http://example.com/replacement-prefix"},
				{path: "/elsewhere", status: 404},
			},
			conds: []cond{{kind: "HTTPRoute", name: "infra/redirect", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"}},
		},
		{
			name:     "URL rewrites",
			backends: []string{"infra/v1"},
			manifests: route("infra", "rewrite", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /host}}]
      filters: [{type: URLRewrite, urlRewrite: {hostname: rewritten.example.com}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /full}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /one}}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /strip}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /prefix/one}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /one}}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /to-slash}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /slash/}}}]
      backendRefs: [{name: v1, port: 8080}]
    - filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /new}}}]
      backendRefs: [{name: v1, port: 8080}]`),
			requests: []request{
				{path: "/prefix/one/two?q", backend: "infra/v1", sentPath: "/one/two?q"},
				{path: "/prefix/one", backend: "infra/v1", sentPath: "/one"},
				{path: "/prefix/one/", backend: "infra/v1", sentPath: "/one/"},
				{path: "/prefix/onex", backend: "infra/v1", sentPath: "/new/prefix/onex"},
				{path: "/to-slash/a", backend: "infra/v1", sentPath: "/slash/a"},
				{path: "/to-slash", backend: "infra/v1", sentPath: "/slash/"},
				{path: "/host/a", backend: "infra/v1", sentPath: "/host/a", sentHeader: map[string]string{"Host": "rewritten.example.com"}},
				{path: "/full/x?y=1", backend: "infra/v1", sentPath: "/one?y=1"},
				{path: "/strip/a/b", backend: "infra/v1", sentPath: "/a/b"},
				{path: "/x", backend: "infra/v1", sentPath: "/new/x"},
			},
		},
		{
			name:     "weighted backends",
			backends: []string{"infra/v1*2", "infra/v2", "infra/v3"},
			manifests: route("infra", "weights", sameNS, `
  rules:
    - backendRefs:
        - {name: v1, port: 8080, weight: 1}
        - {name: v2, port: 8080, weight: 0}
        - {name: v3, port: 8080, weight: 3}`),
			requests: []request{{}},
			check: func(t *testing.T, res *translate.Result) {
				hosts := res.Upstreams["infra.weights.r0.0"]
				var ws []int
				for _, h := range hosts {
					ws = append(ws, h.Weight)
				}
				// v1's two endpoints share its weight of 1; v3's one has 3.
				if !slices.Equal(ws, []int{17, 17, 100}) {
					t.Errorf("weights %v (hosts %v), want [17 17 100]", ws, hosts)
				}
			},
		},
		{
			name:     "cross-namespace backends and ReferenceGrant",
			backends: []string{"app/granted", "web/denied"},
			manifests: route("infra", "to-app", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /app}}]
      backendRefs: [{name: granted, namespace: app, port: 8080}]`) +
				route("infra", "to-web", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /web}}]
      backendRefs: [{name: denied, namespace: web, port: 8080}]`) + `
---
apiVersion: gateway.networking.k8s.io/v1beta1
kind: ReferenceGrant
metadata: {name: grant, namespace: app}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: infra}]
  to: [{group: "", kind: Service, name: granted}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: ReferenceGrant
metadata: {name: wrong-name, namespace: web}
spec:
  from: [{group: gateway.networking.k8s.io, kind: HTTPRoute, namespace: infra}]
  to: [{group: "", kind: Service, name: other}]
`,
			requests: []request{
				{path: "/app", backend: "app/granted"},
				{path: "/web", status: 500},
			},
			conds: []cond{
				{kind: "HTTPRoute", name: "infra/to-app", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
				{kind: "HTTPRoute", name: "infra/to-web", typ: "ResolvedRefs", status: false, reason: "RefNotPermitted"},
				{kind: "HTTPRoute", name: "infra/to-web", typ: "Accepted", status: true, reason: "Accepted"},
			},
		},
		{
			name:     "allowedRoutes namespaces",
			backends: []string{"app/a", "web/w"},
			manifests: route("app", "app-same", `[{name: same-namespace, namespace: infra}]`, `
  hostnames: [same.example]
  rules: [{backendRefs: [{name: a, port: 8080}]}]`) +
				route("app", "app-all", `[{name: all-namespaces, namespace: infra}]`, `
  hostnames: [all.example]
  rules: [{backendRefs: [{name: a, port: 8080}]}]`) +
				route("app", "app-selected", `[{name: backend-namespaces, namespace: infra}]`, `
  hostnames: [selected.example]
  rules: [{backendRefs: [{name: a, port: 8080}]}]`) +
				route("web", "web-selected", `[{name: backend-namespaces, namespace: infra}]`, `
  hostnames: [web.example]
  rules: [{backendRefs: [{name: w, port: 8080}]}]`),
			requests: []request{
				{host: "same.example", status: 404},
				{gw: "10.245.0.2:80", host: "all.example", backend: "app/a"},
				{gw: "10.245.0.3:80", host: "selected.example", backend: "app/a"},
				{gw: "10.245.0.3:80", host: "web.example", status: 404},
			},
			conds: []cond{
				{kind: "HTTPRoute", name: "app/app-same", typ: "Accepted", status: false, reason: "NotAllowedByListeners"},
				{kind: "HTTPRoute", name: "app/app-all", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "HTTPRoute", name: "app/app-selected", typ: "Accepted", status: true, reason: "Accepted"},
				{kind: "HTTPRoute", name: "web/web-selected", typ: "Accepted", status: false, reason: "NotAllowedByListeners"},
			},
		},
		{
			name:     "invalid backends",
			backends: []string{"infra/v1"},
			manifests: route("infra", "kind", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /kind}}]
      backendRefs: [{group: example.com, kind: Bucket, name: v1, port: 8080}]`) +
				route("infra", "missing", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /missing}}]
      backendRefs: [{name: nope, port: 8080}]`) +
				route("infra", "badport", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /badport}}]
      backendRefs: [{name: v1, port: 9999}]`) +
				route("infra", "empty", sameNS, `
  rules:
    - matches: [{path: {type: PathPrefix, value: /empty}}]
      backendRefs: [{name: empty, port: 8080}]
    - matches: [{path: {type: PathPrefix, value: /none}}]
    - matches: [{path: {type: PathPrefix, value: /zero}}]
      backendRefs: [{name: v1, port: 8080, weight: 0}]`) + `
---
apiVersion: v1
kind: Service
metadata: {name: empty, namespace: infra}
spec: {ports: [{name: http, port: 8080}]}
`,
			requests: []request{
				{path: "/kind", status: 500},
				{path: "/missing", status: 500},
				{path: "/badport", status: 500},
				{path: "/empty", status: 503},
				{path: "/none", status: 500},
				{path: "/zero", status: 500},
			},
			conds: []cond{
				{kind: "HTTPRoute", name: "infra/kind", typ: "ResolvedRefs", status: false, reason: "InvalidKind"},
				{kind: "HTTPRoute", name: "infra/missing", typ: "ResolvedRefs", status: false, reason: "BackendNotFound"},
				{kind: "HTTPRoute", name: "infra/badport", typ: "ResolvedRefs", status: false, reason: "BackendNotFound"},
				{kind: "HTTPRoute", name: "infra/empty", typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
			},
		},
		{
			name: "unsupported filter",
			manifests: route("infra", "mirror", sameNS, `
  rules:
    - filters: [{type: RequestMirror, requestMirror: {backendRef: {name: v1, port: 8080}}}]
      backendRefs: [{name: v1, port: 8080}]`),
			requests: []request{{status: 404}},
			conds:    []cond{{kind: "HTTPRoute", name: "infra/mirror", typ: "Accepted", status: false, reason: "UnsupportedValue"}},
		},
		{
			name: "listener conflicts and kinds",
			manifests: `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: conflicts, namespace: infra}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: a, port: 80, protocol: HTTP, hostname: a.example}
    - {name: a2, port: 80, protocol: HTTP, hostname: a.example}
    - {name: b, port: 81, protocol: HTTP}
    - {name: b2, port: 81, protocol: HTTPS, tls: {certificateRefs: [{name: cert}]}}
    - {name: tcp, port: 82, protocol: TCP}
    - {name: kinds, port: 83, protocol: HTTP, allowedRoutes: {kinds: [{kind: HTTPRoute}, {kind: TLSRoute}, {kind: HTTPRoute}]}}
    - {name: onlybad, port: 84, protocol: HTTP, allowedRoutes: {kinds: [{kind: TCPRoute}]}}
`,
			conds: []cond{
				{kind: "Gateway", name: "infra/conflicts", typ: "Accepted", status: true, reason: "ListenersNotValid"},
				{kind: "Gateway", name: "infra/conflicts", parent: 1, typ: "Conflicted", status: true, reason: "HostnameConflict"},
				{kind: "Gateway", name: "infra/conflicts", parent: 2, typ: "Programmed", status: false, reason: "Invalid"},
				{kind: "Gateway", name: "infra/conflicts", parent: 3, typ: "Conflicted", status: true, reason: "ProtocolConflict"},
				{kind: "Gateway", name: "infra/conflicts", parent: 4, typ: "Conflicted", status: true, reason: "ProtocolConflict"},
				{kind: "Gateway", name: "infra/conflicts", parent: 5, typ: "Accepted", status: false, reason: "UnsupportedProtocol"},
				{kind: "Gateway", name: "infra/conflicts", parent: 6, typ: "ResolvedRefs", status: false, reason: "InvalidRouteKinds"},
				{kind: "Gateway", name: "infra/conflicts", parent: 6, typ: "Programmed", status: true, reason: "Programmed"},
				{kind: "Gateway", name: "infra/conflicts", parent: 7, typ: "ResolvedRefs", status: false, reason: "InvalidRouteKinds"},
			},
			check: func(t *testing.T, res *translate.Result) {
				st := res.Gateways[key("infra/conflicts")]
				if k := st.Listeners[5].SupportedKinds; len(k) != 1 || k[0].Kind != "HTTPRoute" {
					t.Errorf("supportedKinds %+v, want HTTPRoute alone", k)
				}
				if k := st.Listeners[0].SupportedKinds; len(k) != 2 || k[0].Kind != "HTTPRoute" || k[1].Kind != "GRPCRoute" {
					t.Errorf("default supportedKinds %+v, want HTTPRoute and GRPCRoute", k)
				}
				for _, i := range []int{4, 6} { // TCP; TCPRoute alone
					if k := st.Listeners[i].SupportedKinds; k == nil || len(k) != 0 {
						t.Errorf("listener %d: supportedKinds %+v, want an empty list", i, k)
					}
				}
				addr := st.Addresses[0].Value // the oldest Gateway: no creationTimestamp
				if !strings.Contains(string(res.Config), addr+":83") || strings.Contains(string(res.Config), addr+":80") {
					t.Errorf("want a listener on port 83 and none on the conflicting 80:\n%s", res.Config)
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			snap := snapshot(t, c.manifests, backends(t, c.backends...)...)
			res := translate.Translate(snap, opts)
			urls := serve(t, res)
			for _, r := range c.requests {
				send(t, urls, r)
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

// Gateways get the pool's addresses, oldest first, keeping those their
// status holds and taking the free ones they ask for; the rest, when the
// pool is spent, are not programmed.
func TestTranslateAddresses(t *testing.T) {
	gw := func(name, created, extra string) string {
		return fmt.Sprintf(`---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: %s, namespace: infra, creationTimestamp: "%s"}
spec:
  gatewayClassName: sluice
  listeners: [{name: http, port: 80, protocol: HTTP}]
%s
`, name, created, extra)
	}
	snap, err := translate.Decode([]byte(strings.Split(base, "---\napiVersion: gateway.networking.k8s.io/v1\nkind: Gateway")[0] +
		gw("a", "2026-01-01T00:00:00Z", "") +
		gw("b", "2026-01-01T00:00:01Z", "status: {addresses: [{type: IPAddress, value: 10.245.0.5}]}") +
		gw("c", "2026-01-01T00:00:02Z", "  addresses: [{type: IPAddress, value: 10.245.0.2}]") +
		gw("d", "2026-01-01T00:00:03Z", "") +
		gw("e", "2026-01-01T00:00:04Z", "") +
		gw("f", "2026-01-01T00:00:05Z", "  addresses: [{value: 10.9.9.9}]")))
	if err != nil {
		t.Fatal(err)
	}
	o := opts
	o.AddressPool = netip.MustParsePrefix("10.245.0.0/29") // .1 to .7
	res := translate.Translate(snap, o)
	load(t, res)
	want := map[string]string{"a": "10.245.0.1", "b": "10.245.0.5", "c": "10.245.0.2", "d": "10.245.0.3", "e": "10.245.0.4"}
	for name, addr := range want {
		if a := res.Gateways[key("infra/"+name)].Addresses; len(a) != 1 || a[0].Value != addr {
			t.Errorf("Gateway %s: addresses %+v, want %s", name, a, addr)
		}
	}
	checkCond(t, res, cond{kind: "Gateway", name: "infra/f", typ: "Accepted", status: false, reason: "UnsupportedAddress"})

	o.AddressPool = netip.MustParsePrefix("10.245.0.0/30") // .1 to .3
	res = translate.Translate(snap, o)
	load(t, res)
	checkCond(t, res, cond{kind: "Gateway", name: "infra/e", typ: "Programmed", status: false, reason: "AddressNotAssigned"})
	checkCond(t, res, cond{kind: "Gateway", name: "infra/a", typ: "Programmed", status: true, reason: "Programmed"})
}

// An HTTPS listener serves the certificate of its Secret, named across
// namespaces only with a ReferenceGrant.
func TestTranslateHTTPS(t *testing.T) {
	ca := sluicetest.NewCA(t)
	dir := t.TempDir()
	certFile, keyFile := ca.IssueFiles(t, dir, "secure.example")
	crt, _ := os.ReadFile(certFile)
	k, _ := os.ReadFile(keyFile)
	snap := snapshot(t, `
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: tls, namespace: infra}
spec:
  gatewayClassName: sluice
  listeners:
    - {name: https, port: 443, protocol: HTTPS, hostname: secure.example, tls: {certificateRefs: [{name: cert}]}}
    - {name: other-ns, port: 8443, protocol: HTTPS, tls: {certificateRefs: [{name: cert, namespace: app}]}}
    - {name: missing, port: 9443, protocol: HTTPS, tls: {certificateRefs: [{name: nope}]}}
`+route("infra", "secure", `[{name: tls}]`, `
  rules: [{filters: [{type: RequestRedirect, requestRedirect: {hostname: elsewhere.example}}]}]`))
	for _, ns := range []string{"infra", "app"} {
		snap.Secrets = append(snap.Secrets, &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "cert"},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: k},
		})
	}
	res := translate.Translate(snap, opts)
	cfg := load(t, res)
	if a := cfg.HTTPSListener(); a == nil {
		t.Fatalf("no HTTPS listener in\n%s", res.Config)
	}
	for _, c := range []cond{
		{kind: "Gateway", name: "infra/tls", parent: 1, typ: "ResolvedRefs", status: true, reason: "ResolvedRefs"},
		{kind: "Gateway", name: "infra/tls", parent: 2, typ: "ResolvedRefs", status: false, reason: "RefNotPermitted"},
		{kind: "Gateway", name: "infra/tls", parent: 3, typ: "ResolvedRefs", status: false, reason: "InvalidCertificateRef"},
		{kind: "HTTPRoute", name: "infra/secure", typ: "Accepted", status: true, reason: "Accepted"},
	} {
		checkCond(t, res, c)
	}
	// The route counts as attached to the listeners whose certificates do
	// not resolve (the API counts attachment whatever a listener's state),
	// and they are not served.
	var attached []int32
	for _, l := range res.Gateways[key("infra/tls")].Listeners {
		attached = append(attached, l.AttachedRoutes)
	}
	if !slices.Equal(attached, []int32{1, 1, 1}) {
		t.Errorf("attached routes per listener %v, want [1 1 1]", attached)
	}
	if strings.Contains(string(res.Config), ":8443") || strings.Contains(string(res.Config), ":9443") {
		t.Errorf("the invalid listeners are served:\n%s", res.Config)
	}
	if !strings.Contains(string(res.Config), "https://elsewhere.example$path$query") {
		t.Errorf("the redirect through an HTTPS listener keeps https:\n%s", res.Config)
	}
	if len(res.Files) != 2 {
		t.Errorf("files %v, want the one certificate and key", slices.Collect(maps.Keys(res.Files)))
	}
}
