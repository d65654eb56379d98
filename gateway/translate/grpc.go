package translate

import (
	"fmt"
	"regexp"
	"strings"

	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// A GRPCRoute is translated as the HTTPRoute it amounts to: gRPC is
// HTTP/2 POSTs to /SERVICE/METHOD, so its method match is a path match,
// its header matches and header filters are HTTPRoute's, and its backends
// are reached over HTTP/2 (the proxy's transport h2c). The HTTPRoute made
// keeps the GRPCRoute's metadata, so precedence, set names and status go
// by the GRPCRoute's name and age.

// grpcPath returns the HTTPRoute path match of a gRPC method match:
// service and method exact, an exact path /SERVICE/METHOD; a service
// alone, the prefix /SERVICE; a method alone or regular expressions, a
// regular expression over both parts (either part any name when empty).
func grpcPath(m *gatewayv1.GRPCMethodMatch) *gatewayv1.HTTPPathMatch {
	if m == nil {
		return nil
	}
	svc, meth := orDefault(m.Service, ""), orDefault(m.Method, "")
	if m.Type == nil || *m.Type == gatewayv1.GRPCMethodMatchExact {
		switch {
		case svc != "" && meth != "":
			return &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchExact), Value: ptr("/" + svc + "/" + meth)}
		case svc != "":
			return &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchPathPrefix), Value: ptr("/" + svc)}
		case meth != "":
			return &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchRegularExpression), Value: ptr("/[^/]+/" + regexp.QuoteMeta(meth))}
		}
		return nil
	}
	part := func(s string) string {
		if s == "" {
			return "[^/]+"
		}
		return "(?:" + s + ")"
	}
	return &gatewayv1.HTTPPathMatch{Type: ptr(gatewayv1.PathMatchRegularExpression), Value: ptr("/" + part(svc) + "/" + part(meth))}
}

// grpcName matches a gRPC service (dotted) or method name as the
// Gateway API's schema allows them, so that an exact name is a path
// segment with nothing to escape.
var grpcName = regexp.MustCompile(`^[A-Za-z_][A-Za-z_0-9]*(\.[A-Za-z_][A-Za-z_0-9]*)*$`)

// checkGRPCMatch returns why Sluice cannot serve a gRPC method match, or "".
func checkGRPCMatch(m *gatewayv1.GRPCMethodMatch) string {
	if m == nil {
		return ""
	}
	svc, meth := orDefault(m.Service, ""), orDefault(m.Method, "")
	switch {
	case m.Type != nil && *m.Type == gatewayv1.GRPCMethodMatchRegularExpression:
		for _, s := range []string{svc, meth} {
			if _, err := regexp.Compile(s); err != nil {
				return fmt.Sprintf("method match %q: not a regular expression Sluice (RE2) takes: %v", s, err)
			}
		}
	case m.Type != nil && *m.Type != gatewayv1.GRPCMethodMatchExact:
		return fmt.Sprintf("method match type %q is not supported", *m.Type)
	case svc == "" && meth == "":
		return "a method match needs a service or a method"
	case svc != "" && !grpcName.MatchString(svc) || meth != "" && (!grpcName.MatchString(meth) || strings.Contains(meth, ".")):
		return fmt.Sprintf("method match %q/%q: a service is a dotted name and a method a name", svc, meth)
	}
	return ""
}

// grpcToHTTP returns the HTTPRoute a GRPCRoute amounts to, and why it
// cannot be served ("" when it can). Filters Sluice does not apply are
// carried over under their type, for the rules check to refuse.
func grpcToHTTP(g *gatewayv1.GRPCRoute) (*gatewayv1.HTTPRoute, string) {
	r := &gatewayv1.HTTPRoute{ObjectMeta: g.ObjectMeta}
	r.Spec.CommonRouteSpec = g.Spec.CommonRouteSpec
	r.Spec.Hostnames = g.Spec.Hostnames
	invalid := ""
	for ri, rule := range g.Spec.Rules {
		hr := gatewayv1.HTTPRouteRule{Name: rule.Name}
		for _, m := range rule.Matches {
			hm := gatewayv1.HTTPRouteMatch{Path: grpcPath(m.Method)}
			if msg := checkGRPCMatch(m.Method); msg != "" {
				if invalid == "" {
					invalid = fmt.Sprintf("rule %d: %s", ri, msg)
				}
				hm.Path = nil
			}
			for _, h := range m.Headers {
				typ := gatewayv1.HeaderMatchExact
				if h.Type != nil {
					typ = gatewayv1.HeaderMatchType(*h.Type)
				}
				hm.Headers = append(hm.Headers, gatewayv1.HTTPHeaderMatch{Type: ptr(typ), Name: gatewayv1.HTTPHeaderName(h.Name), Value: h.Value})
			}
			hr.Matches = append(hr.Matches, hm)
		}
		for _, f := range rule.Filters {
			hr.Filters = append(hr.Filters, grpcFilter(f))
		}
		for _, b := range rule.BackendRefs {
			hb := gatewayv1.HTTPBackendRef{BackendRef: b.BackendRef}
			for _, f := range b.Filters {
				hb.Filters = append(hb.Filters, grpcFilter(f))
			}
			hr.BackendRefs = append(hr.BackendRefs, hb)
		}
		r.Spec.Rules = append(r.Spec.Rules, hr)
	}
	return r, invalid
}

func grpcFilter(f gatewayv1.GRPCRouteFilter) gatewayv1.HTTPRouteFilter {
	return gatewayv1.HTTPRouteFilter{
		Type:                   gatewayv1.HTTPRouteFilterType(f.Type),
		RequestHeaderModifier:  f.RequestHeaderModifier,
		ResponseHeaderModifier: f.ResponseHeaderModifier,
		RequestMirror:          f.RequestMirror,
		ExtensionRef:           f.ExtensionRef,
	}
}
