package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
)

// entry is one match of one rule of an HTTPRoute, for one hostname.
type entry struct {
	route    *gatewayv1.HTTPRoute
	rule     int // the rule's index in the route
	match    int // the match's index in the rule
	pathType gatewayv1.PathMatchType
	path     string // Exact and PathPrefix: canonical, a prefix without its trailing /
	m        gatewayv1.HTTPRouteMatch
	act      *action
	scheme   string // of the listener it came through: http or https
	port     int32  // the listener's port
	local    string // the listener's address and port, its Gateway's: "10.245.0.1:80"
	lhost    string // the listener's hostname, lowered; "" for any
	host     string // the hostname it serves (of the listener's and the route's): "" for any
}

// action is what a rule does with the requests its matches take.
type action struct {
	h2c     bool // a GRPCRoute's: the backends are reached over HTTP/2 (h2c)
	filters []gatewayv1.HTTPRouteFilter
	status  int // when not 0, the rule answers this status (no valid backend)
	hosts   []Host
	name    string // the route's key and the rule's index: the base of its set names
	sets    int    // the upstream sets named after it so far
}

type attachment struct {
	l     *listener
	hosts []string
}

func (t *translation) routes() {
	routes := slices.Clone(t.snap.HTTPRoutes)
	t.grpc = map[*gatewayv1.HTTPRoute]string{}
	for _, g := range t.snap.GRPCRoutes {
		r, invalid := grpcToHTTP(g)
		t.grpc[r] = invalid
		routes = append(routes, r)
	}
	slices.SortFunc(routes, func(a, b *gatewayv1.HTTPRoute) int { return olderFirst(a, b) })
	for _, r := range routes {
		t.route(r)
	}
	t.finish()
}

// kind returns the kind of the route r was made from: GRPCRoute for the
// HTTPRoutes that stand for GRPCRoutes, else HTTPRoute.
func (t *translation) kind(r *gatewayv1.HTTPRoute) string {
	if _, ok := t.grpc[r]; ok {
		return kindGRPC
	}
	return kindHTTP
}

func (t *translation) route(r *gatewayv1.HTTPRoute) {
	gen := r.Generation
	var st gatewayv1.HTTPRouteStatus
	st.Parents = []gatewayv1.RouteParentStatus{}
	acts, resolved, invalid := t.rules(r)
	grpcInvalid, isGRPC := t.grpc[r]
	if isGRPC {
		invalid = cmp.Or(grpcInvalid, invalid)
		for _, a := range acts {
			a.h2c = true
		}
	}
	rhosts := make([]string, len(r.Spec.Hostnames))
	for i, h := range r.Spec.Hostnames {
		rhosts[i] = lowerHost(string(h))
		if !validHostname(rhosts[i], true) && invalid == "" {
			invalid = fmt.Sprintf("hostname %q is not a host name", h)
		}
	}
	mine := false
	for _, ref := range r.Spec.ParentRefs {
		if orDefault(ref.Group, group) != group || orDefault(ref.Kind, kindGW) != kindGW {
			continue
		}
		g := t.gwMap[types.NamespacedName{Namespace: orDefault(ref.Namespace, r.Namespace), Name: string(ref.Name)}]
		if g == nil {
			continue
		}
		mine = true
		ps := gatewayv1.RouteParentStatus{ParentRef: ref, ControllerName: gatewayv1.GatewayController(t.opts.ControllerName)}
		accepted := t.attach(g, ref, r, rhosts, acts, invalid)
		accepted.ObservedGeneration = gen
		resolved.ObservedGeneration = gen
		ps.Conditions = []metav1.Condition{accepted, resolved}
		st.Parents = append(st.Parents, ps)
	}
	switch {
	case mine && isGRPC:
		t.res.GRPCRoutes[nn(r)] = gatewayv1.GRPCRouteStatus(st)
	case mine:
		t.res.HTTPRoutes[nn(r)] = st
	}
}

// attach attaches r to the listeners of g that ref names and that take it,
// adding its entries, and returns the Accepted condition of that parent.
func (t *translation) attach(g *gw, ref gatewayv1.ParentReference, r *gatewayv1.HTTPRoute, rhosts []string, acts []*action, invalid string) metav1.Condition {
	accepted := func(reason gatewayv1.RouteConditionReason, msg string) metav1.Condition {
		return condition(string(gatewayv1.RouteConditionAccepted), reason == gatewayv1.RouteReasonAccepted, string(reason), msg, 0)
	}
	if invalid != "" {
		return accepted(gatewayv1.RouteReasonUnsupportedValue, invalid)
	}
	if !t.gatewayUsable(g) {
		return accepted(gatewayv1.RouteReasonNoMatchingParent, "the Gateway is not programmed")
	}
	var named []*listener
	for _, l := range g.listeners {
		if ref.SectionName != nil && l.spec.Name != *ref.SectionName || ref.Port != nil && l.spec.Port != *ref.Port {
			continue
		}
		named = append(named, l)
	}
	if len(named) == 0 {
		return accepted(gatewayv1.RouteReasonNoMatchingParent, "the Gateway has no listener of that sectionName and port")
	}
	// A route attaches to the listeners that allow it whatever their state
	// (the API counts it in attachedRoutes), and is served by the valid ones.
	var allowed []*listener
	for _, l := range named {
		if l.takes(t.kind(r)) && t.allows(l, r.Namespace) {
			allowed = append(allowed, l)
		}
	}
	if len(allowed) == 0 {
		return accepted(gatewayv1.RouteReasonNotAllowedByListeners, "no listener of the Gateway takes "+t.kind(r)+"s from namespace "+r.Namespace)
	}
	var att []attachment
	for _, l := range allowed {
		if hs := intersect(l.hostname, rhosts); len(hs) > 0 {
			att = append(att, attachment{l, hs})
		}
	}
	if len(att) == 0 {
		return accepted(gatewayv1.RouteReasonNoMatchingListenerHostname, "no hostname of the route is served by a listener it may attach to")
	}
	// An HTTPRoute and a GRPCRoute may not share a hostname on a
	// listener: the older (routes come oldest first) keeps it.
	kind := t.kind(r)
	for _, a := range att {
		for other, hs := range a.l.claims {
			if other == kind {
				continue
			}
			for _, h := range a.hosts {
				if slices.ContainsFunc(hs, func(o string) bool { return hostsOverlap(h, o) }) {
					return accepted(gatewayv1.RouteReasonNotAllowedByListeners, fmt.Sprintf("listener %s already serves an older %s for hostname %q", a.l.spec.Name, other, cmp.Or(h, "*")))
				}
			}
		}
	}
	for _, a := range att {
		if a.l.claims == nil {
			a.l.claims = map[string][]string{}
		}
		a.l.claims[kind] = append(a.l.claims[kind], a.hosts...)
	}
	for _, a := range att {
		a.l.attached++
		if !a.l.valid {
			continue
		}
		scheme := "http"
		if a.l.spec.Protocol == gatewayv1.HTTPSProtocolType {
			scheme = "https"
		}
		local := netip.AddrPortFrom(g.addr, uint16(a.l.spec.Port)).String()
		for _, h := range a.hosts {
			t.addEntries(h, r, acts, scheme, a.l, local)
		}
	}
	return accepted(gatewayv1.RouteReasonAccepted, "accepted")
}

// hostsOverlap reports whether two hostnames a route serves ("" for any,
// or a wildcard) share a host.
func hostsOverlap(a, b string) bool {
	return a == "" || b == "" || hostMatches(a, b) || hostMatches(b, a)
}

// gatewayUsable reports whether routes can attach to g: it has an address.
func (t *translation) gatewayUsable(g *gw) bool { return g.addr.IsValid() }

// addEntries adds the entries of every match of r's rules under hostname h,
// for the listener l of scheme and local address local.
func (t *translation) addEntries(h string, r *gatewayv1.HTTPRoute, acts []*action, scheme string, l *listener, local string) {
	for ri, rule := range r.Spec.Rules {
		matches := rule.Matches
		if len(matches) == 0 {
			matches = []gatewayv1.HTTPRouteMatch{{}}
		}
		for mi, m := range matches {
			key := fmt.Sprintf("%s\x00%s\x00%s/%s\x00%d\x00%d", h, local, r.Namespace, r.Name, ri, mi)
			if t.seen[key] {
				continue
			}
			t.seen[key] = true
			e := &entry{route: r, rule: ri, match: mi, m: m, act: acts[ri], scheme: scheme, port: l.spec.Port, local: local, lhost: l.hostname, host: h}
			e.pathType, e.path = pathOf(m)
			t.hosts[h] = append(t.hosts[h], e)
		}
	}
}

// pathOf returns a match's path type and value: a prefix without its
// trailing slash (but "/"), the others as written, canonical.
func pathOf(m gatewayv1.HTTPRouteMatch) (gatewayv1.PathMatchType, string) {
	typ, v := gatewayv1.PathMatchPathPrefix, "/"
	if m.Path != nil {
		if m.Path.Type != nil {
			typ = *m.Path.Type
		}
		if m.Path.Value != nil {
			v = *m.Path.Value
		}
	}
	if typ == gatewayv1.PathMatchRegularExpression {
		return typ, v
	}
	v = pipe.CanonicalPattern(v)
	if typ == gatewayv1.PathMatchPathPrefix && v != "/" {
		v = strings.TrimSuffix(v, "/")
	}
	return typ, v
}

// rules checks r's rules, returning their actions, the ResolvedRefs
// condition of r, and why r cannot be served ("" when it can).
func (t *translation) rules(r *gatewayv1.HTTPRoute) ([]*action, metav1.Condition, string) {
	resolved := condition(string(gatewayv1.RouteConditionResolvedRefs), true, string(gatewayv1.RouteReasonResolvedRefs), "resolved", 0)
	var acts []*action
	invalid := ""
	fail := func(reason gatewayv1.RouteConditionReason, msg string) {
		if resolved.Status == metav1.ConditionTrue {
			resolved = condition(string(gatewayv1.RouteConditionResolvedRefs), false, string(reason), msg, 0)
		}
	}
	for ri, rule := range r.Spec.Rules {
		a := &action{filters: rule.Filters, name: fmt.Sprintf("%s.%s.r%d", r.Namespace, r.Name, ri)}
		acts = append(acts, a)
		for _, m := range rule.Matches {
			if msg := checkMatch(m); msg != "" && invalid == "" {
				invalid = fmt.Sprintf("rule %d: %s", ri, msg)
			}
		}
		for _, f := range rule.Filters {
			if msg := checkFilter(f, rule); msg != "" && invalid == "" {
				invalid = fmt.Sprintf("rule %d: %s", ri, msg)
			}
		}
		// The backends: each valid one's ready endpoints, its weight
		// shared among them.
		type share struct {
			weight float64
			hosts  []string
		}
		var shares []share
		good := 0 // the weight of the valid backends
		for _, b := range rule.BackendRefs {
			w := 1
			if b.Weight != nil {
				w = int(*b.Weight)
			}
			if len(b.Filters) > 0 && invalid == "" {
				invalid = fmt.Sprintf("rule %d: Sluice has no filters on a backendRef: put them on the rule", ri)
			}
			if orDefault(b.Group, "") != "" || orDefault(b.Kind, kindSvc) != kindSvc {
				fail(gatewayv1.RouteReasonInvalidKind, fmt.Sprintf("backendRef %s: Sluice sends to Services (group \"\", kind Service) alone", b.Name))
				continue
			}
			ns := orDefault(b.Namespace, r.Namespace)
			if !t.granted(t.kind(r), r.Namespace, "", kindSvc, ns, string(b.Name)) {
				fail(gatewayv1.RouteReasonRefNotPermitted, fmt.Sprintf("backendRef %s/%s: no ReferenceGrant in namespace %s lets %ss of %s refer to it", ns, b.Name, ns, t.kind(r), r.Namespace))
				continue
			}
			svc := t.services[types.NamespacedName{Namespace: ns, Name: string(b.Name)}]
			if svc == nil {
				fail(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backendRef %s/%s: no such Service", ns, b.Name))
				continue
			}
			if b.Port == nil {
				fail(gatewayv1.RouteReasonUnsupportedValue, fmt.Sprintf("backendRef %s/%s: a Service backend needs a port", ns, b.Name))
				continue
			}
			hosts, ok := t.endpoints(svc, int32(*b.Port))
			if !ok {
				fail(gatewayv1.RouteReasonBackendNotFound, fmt.Sprintf("backendRef %s/%s: the Service has no TCP port %d", ns, b.Name, *b.Port))
				continue
			}
			good += w
			if w > 0 && len(hosts) > 0 {
				shares = append(shares, share{float64(w) / float64(len(hosts)), hosts})
			}
		}
		switch {
		case good == 0:
			a.status = 500 // no backend, none valid, or all of weight 0: the spec's 500
		case len(shares) == 0:
			a.status = 503 // valid backends, no ready endpoint
		default:
			a.hosts = weigh(shares2(shares, func(s share) (float64, []string) { return s.weight, s.hosts }))
		}
	}
	return acts, resolved, invalid
}

// shares2 unpacks shares for weigh.
func shares2[S any](s []S, f func(S) (float64, []string)) map[string]float64 {
	out := map[string]float64{}
	for _, x := range s {
		w, hs := f(x)
		for _, h := range hs {
			out[h] += w
		}
	}
	return out
}

// weigh turns each host's share into a Sluice weight of 1 to 100,
// proportional to it; all weights 1 (left out) when the shares are equal.
func weigh(shares map[string]float64) []Host {
	hosts := make([]string, 0, len(shares))
	hi, lo := 0.0, -1.0
	for h, w := range shares {
		hosts = append(hosts, h)
		hi = max(hi, w)
		if lo < 0 || w < lo {
			lo = w
		}
	}
	slices.Sort(hosts)
	out := make([]Host, len(hosts))
	for i, h := range hosts {
		out[i].Name = h
		if hi != lo {
			out[i].Weight = max(1, int(shares[h]/hi*100+0.5))
		}
	}
	return out
}

// checkMatch returns why Sluice cannot serve a match, or "".
func checkMatch(m gatewayv1.HTTPRouteMatch) string {
	typ, v := pathOf(m)
	switch typ {
	case gatewayv1.PathMatchExact, gatewayv1.PathMatchPathPrefix:
		if !strings.HasPrefix(v, "/") || strings.ContainsAny(v, "{}?# ") || strings.ContainsFunc(v, func(r rune) bool { return r < 0x20 || r == 0x7f }) || pipe.CheckPattern(v) != nil {
			return fmt.Sprintf("path %q: Sluice matches paths that start with / and, decoded, hold no { } ? #, space or control character", v)
		}
	case gatewayv1.PathMatchRegularExpression:
		if _, err := regexp.Compile(v); err != nil {
			return fmt.Sprintf("path %q: not a regular expression Sluice (RE2) takes: %v", v, err)
		}
	default:
		return fmt.Sprintf("path match type %q is not supported", typ)
	}
	for _, h := range m.Headers {
		if !httpgrammar.IsToken(string(h.Name)) {
			return fmt.Sprintf("header %q: not a field name", h.Name)
		}
		if h.Type != nil && *h.Type == gatewayv1.HeaderMatchRegularExpression {
			if _, err := regexp.Compile(h.Value); err != nil {
				return fmt.Sprintf("header %s: %v", h.Name, err)
			}
		} else if h.Type != nil && *h.Type != gatewayv1.HeaderMatchExact {
			return fmt.Sprintf("header match type %q is not supported", *h.Type)
		}
	}
	for _, q := range m.QueryParams {
		if q.Name == "" || !httpgrammar.IsToken(string(q.Name)) {
			return fmt.Sprintf("query parameter name %q: Sluice matches names that are tokens", q.Name)
		}
		if q.Type != nil && *q.Type == gatewayv1.QueryParamMatchRegularExpression {
			if _, err := regexp.Compile(q.Value); err != nil {
				return fmt.Sprintf("query parameter %s: %v", q.Name, err)
			}
		} else if q.Type != nil && *q.Type != gatewayv1.QueryParamMatchExact {
			return fmt.Sprintf("query match type %q is not supported", *q.Type)
		}
	}
	if m.Method != nil && !slices.Contains([]string{"GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS", "TRACE", "PATCH"}, string(*m.Method)) {
		return fmt.Sprintf("method %q: Sluice routes GET, HEAD, POST, PUT, DELETE, OPTIONS, TRACE and PATCH", *m.Method)
	}
	return ""
}

// checkFilter returns why Sluice cannot apply a filter of rule, or "".
func checkFilter(f gatewayv1.HTTPRouteFilter, rule gatewayv1.HTTPRouteRule) string {
	switch f.Type {
	case gatewayv1.HTTPRouteFilterRequestHeaderModifier, gatewayv1.HTTPRouteFilterResponseHeaderModifier:
		m := f.RequestHeaderModifier
		if f.Type == gatewayv1.HTTPRouteFilterResponseHeaderModifier {
			m = f.ResponseHeaderModifier
		}
		if m == nil {
			return fmt.Sprintf("a %s filter needs its settings", f.Type)
		}
		for _, h := range append(slices.Clone(m.Set), m.Add...) {
			if !httpgrammar.IsToken(string(h.Name)) || !httpgrammar.IsFieldValue(h.Value) {
				return fmt.Sprintf("header %q: %q is not a field Sluice can send", h.Name, h.Value)
			}
		}
		for _, n := range m.Remove {
			if !httpgrammar.IsToken(n) {
				return fmt.Sprintf("header %q is not a field name", n)
			}
		}
		return ""
	case gatewayv1.HTTPRouteFilterRequestRedirect:
		rd := f.RequestRedirect
		if rd == nil {
			return "a RequestRedirect filter needs requestRedirect"
		}
		if rd.Scheme != nil && *rd.Scheme != "http" && *rd.Scheme != "https" {
			return fmt.Sprintf("redirect scheme %q: Sluice redirects to http or https", *rd.Scheme)
		}
		if rd.Hostname != nil && !validHostname(lowerHost(string(*rd.Hostname)), false) {
			return fmt.Sprintf("redirect hostname %q is not a host name", *rd.Hostname)
		}
		if rd.StatusCode != nil && !slices.Contains([]int{301, 302, 303, 307, 308}, *rd.StatusCode) {
			return fmt.Sprintf("redirect status %d is not supported", *rd.StatusCode)
		}
		if rd.Path != nil {
			return checkPathModifier(*rd.Path, rule, true)
		}
		return ""
	case gatewayv1.HTTPRouteFilterURLRewrite:
		rw := f.URLRewrite
		if rw == nil {
			return "a URLRewrite filter needs urlRewrite"
		}
		if rw.Hostname != nil && !validHostname(lowerHost(string(*rw.Hostname)), false) {
			return fmt.Sprintf("rewrite hostname %q is not a host name", *rw.Hostname)
		}
		if rw.Path != nil {
			return checkPathModifier(*rw.Path, rule, false)
		}
		return ""
	}
	return fmt.Sprintf("filter %s is not supported by Sluice", f.Type)
}

// checkPathModifier returns why Sluice cannot apply a path modifier, or "".
// A redirect's prefix replacement is redirect's strip_prefix; a rewrite's
// is the proxy's strip_prefix (to "/") or rewrite's.
func checkPathModifier(p gatewayv1.HTTPPathModifier, rule gatewayv1.HTTPRouteRule, redirect bool) string {
	switch p.Type {
	case gatewayv1.FullPathHTTPPathModifier:
		if p.ReplaceFullPath == nil || !strings.HasPrefix(*p.ReplaceFullPath, "/") || pipe.CanonicalPattern(*p.ReplaceFullPath) != *p.ReplaceFullPath {
			return "replaceFullPath must be a canonical path starting with /"
		}
	case gatewayv1.PrefixMatchHTTPPathModifier:
		if p.ReplacePrefixMatch == nil || !strings.HasPrefix(*p.ReplacePrefixMatch, "/") || pipe.CanonicalPattern(*p.ReplacePrefixMatch) != *p.ReplacePrefixMatch {
			return "replacePrefixMatch must be a canonical path starting with /"
		}
		for _, m := range rule.Matches {
			if typ, _ := pathOf(m); typ != gatewayv1.PathMatchPathPrefix {
				return "replacePrefixMatch needs every match of the rule to be a PathPrefix"
			}
		}
	default:
		return fmt.Sprintf("path modifier type %q is not supported", p.Type)
	}
	return ""
}
