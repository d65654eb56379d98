package translate

import (
	"crypto/tls"
	"fmt"
	"net/netip"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// gw is one of this controller's Gateways as translated.
type gw struct {
	obj       *gatewayv1.Gateway
	addr      netip.Addr // invalid when none could be given
	listeners []*listener
	status    gatewayv1.GatewayStatus
}

// listener is one listener of a Gateway as translated.
type listener struct {
	gw       *gw
	spec     gatewayv1.Listener
	hostname string // lowered; "" for any
	valid    bool   // routes may attach to it
	kinds    []gatewayv1.RouteGroupKind
	attached int32
	claims   map[string][]string // the hostnames of the routes attached, by kind
	certs    []certFiles         // HTTPS: the certificates, in order
	conds    []metav1.Condition
}

type certFiles struct{ cert, key string }

// tlsListen is one HTTPS listen entry: an address and the certificates of
// the listeners on it.
type tlsListen struct {
	address string
	certs   []certFiles
}

func (t *translation) gateways() {
	t.gwMap = map[types.NamespacedName]*gw{}
	for _, g := range t.snap.Gateways {
		if t.ourClasses[string(g.Spec.GatewayClassName)] {
			x := &gw{obj: g}
			t.gws = append(t.gws, x)
			t.gwMap[nn(g)] = x
		}
	}
	slices.SortFunc(t.gws, func(a, b *gw) int { return olderFirst(a.obj, b.obj) })
	t.assignAddresses()
	for _, g := range t.gws {
		t.gateway(g)
	}
}

// assignAddresses gives each Gateway an address of the pool: the one it
// asks for in spec.addresses, else the one its status holds (so that
// addresses survive a restart of the controller), else the first free one,
// the oldest Gateways first.
func (t *translation) assignAddresses() {
	pool := t.opts.AddressPool
	used := map[netip.Addr]bool{}
	take := func(s string) (netip.Addr, bool) {
		a, err := netip.ParseAddr(s)
		if err != nil || !pool.IsValid() || !pool.Contains(a) || a == pool.Masked().Addr() || used[a] {
			return netip.Addr{}, false
		}
		used[a] = true
		return a, true
	}
	var rest []*gw
	for _, g := range t.gws {
		if len(g.obj.Spec.Addresses) > 0 {
			sa := g.obj.Spec.Addresses[0]
			if sa.Type == nil || *sa.Type == gatewayv1.IPAddressType {
				g.addr, _ = take(sa.Value)
			}
			continue
		}
		for _, sa := range g.obj.Status.Addresses {
			if a, ok := take(sa.Value); ok {
				g.addr = a
				break
			}
		}
		if !g.addr.IsValid() {
			rest = append(rest, g)
		}
	}
	if !pool.IsValid() {
		return
	}
	next := pool.Masked().Addr().Next()
	for _, g := range rest {
		for pool.Contains(next) && used[next] {
			next = next.Next()
		}
		if !pool.Contains(next) {
			return // the pool is spent: the rest get none
		}
		g.addr, used[next] = next, true
	}
}

func (t *translation) gateway(g *gw) {
	gen := g.obj.Generation
	for _, l := range g.obj.Spec.Listeners {
		t.listener(g, l)
	}
	t.conflicts(g)
	valid := 0
	for _, l := range g.listeners {
		if l.valid {
			valid++
		}
	}
	st := &g.status
	switch {
	case len(g.obj.Spec.Addresses) > 0 && !g.addr.IsValid():
		st.Conditions = append(st.Conditions,
			condition(string(gatewayv1.GatewayConditionAccepted), false, string(gatewayv1.GatewayReasonUnsupportedAddress), "spec.addresses: Sluice gives each Gateway an IP address of its pool ("+t.opts.AddressPool.String()+"): name a free one of it, or none", gen),
			condition(string(gatewayv1.GatewayConditionProgrammed), false, string(gatewayv1.GatewayReasonAddressNotUsable), "the address asked for is not in the pool or is taken", gen))
		return
	case valid == 0 && len(g.listeners) > 0:
		st.Conditions = append(st.Conditions, condition(string(gatewayv1.GatewayConditionAccepted), false, string(gatewayv1.GatewayReasonListenersNotValid), "no listener is valid", gen))
	case valid < len(g.listeners):
		st.Conditions = append(st.Conditions, condition(string(gatewayv1.GatewayConditionAccepted), true, string(gatewayv1.GatewayReasonListenersNotValid), "some listeners are not valid: see their conditions", gen))
	default:
		st.Conditions = append(st.Conditions, condition(string(gatewayv1.GatewayConditionAccepted), true, string(gatewayv1.GatewayReasonAccepted), "accepted", gen))
	}
	if !g.addr.IsValid() {
		st.Conditions = append(st.Conditions, condition(string(gatewayv1.GatewayConditionProgrammed), false, string(gatewayv1.GatewayReasonAddressNotAssigned), "no free address left in the pool "+t.opts.AddressPool.String(), gen))
		for _, l := range g.listeners {
			l.valid = false
		}
		return
	}
	st.Addresses = []gatewayv1.GatewayStatusAddress{{Type: ptr(gatewayv1.IPAddressType), Value: g.addr.String()}}
	st.Conditions = append(st.Conditions, condition(string(gatewayv1.GatewayConditionProgrammed), true, string(gatewayv1.GatewayReasonProgrammed), "served at "+g.addr.String(), gen))
	for _, l := range g.listeners {
		if !l.valid {
			continue
		}
		addr := netip.AddrPortFrom(g.addr, uint16(l.spec.Port)).String()
		t.listenHosts[addr] = append(t.listenHosts[addr], l.hostname)
		if _, ok := t.hosts[l.hostname]; !ok && l.hostname != "" {
			t.hosts[l.hostname] = nil // a site of its own, even without routes: its hosts are its
		}
		if l.spec.Protocol == gatewayv1.HTTPSProtocolType {
			tl := t.tls[addr]
			if tl == nil {
				tl = &tlsListen{address: addr}
				t.tls[addr] = tl
			}
			tl.certs = append(tl.certs, l.certs...)
		} else if !t.plainSeen[addr] {
			t.plainSeen[addr] = true
			t.plain = append(t.plain, addr)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// listener checks one listener and adds it to g.
func (t *translation) listener(g *gw, spec gatewayv1.Listener) {
	l := &listener{gw: g, spec: spec, valid: true}
	if spec.Hostname != nil {
		l.hostname = lowerHost(string(*spec.Hostname))
	}
	g.listeners = append(g.listeners, l)
	gen := g.obj.Generation
	accepted := condition(string(gatewayv1.ListenerConditionAccepted), true, string(gatewayv1.ListenerReasonAccepted), "accepted", gen)
	resolved := condition(string(gatewayv1.ListenerConditionResolvedRefs), true, string(gatewayv1.ListenerReasonResolvedRefs), "resolved", gen)
	switch {
	case l.hostname != "" && !validHostname(l.hostname, true):
		accepted = condition(string(gatewayv1.ListenerConditionAccepted), false, string(gatewayv1.ListenerReasonUnsupportedValue), "hostname is not a host name", gen)
		l.valid = false
	}
	switch spec.Protocol {
	case gatewayv1.HTTPProtocolType:
	case gatewayv1.HTTPSProtocolType:
		if spec.TLS == nil || spec.TLS.Mode != nil && *spec.TLS.Mode != gatewayv1.TLSModeTerminate {
			accepted = condition(string(gatewayv1.ListenerConditionAccepted), false, string(gatewayv1.ListenerReasonUnsupportedValue), "Sluice terminates TLS: an HTTPS listener needs tls.mode Terminate and certificateRefs", gen)
			l.valid = false
		} else if reason, msg := t.certificates(g, l); reason != "" {
			resolved = condition(string(gatewayv1.ListenerConditionResolvedRefs), false, string(reason), msg, gen)
			l.valid = false
		}
	default:
		accepted = condition(string(gatewayv1.ListenerConditionAccepted), false, string(gatewayv1.ListenerReasonUnsupportedProtocol), "Sluice serves HTTP and HTTPS listeners, not "+string(spec.Protocol), gen)
		l.valid = false
	}
	// The route kinds: HTTPRoute and GRPCRoute, by default and when asked for.
	if spec.AllowedRoutes == nil || len(spec.AllowedRoutes.Kinds) == 0 {
		l.kinds = []gatewayv1.RouteGroupKind{{Group: ptr(gatewayv1.Group(group)), Kind: kindHTTP}, {Group: ptr(gatewayv1.Group(group)), Kind: kindGRPC}}
	} else {
		bad := false
		for _, k := range spec.AllowedRoutes.Kinds {
			if orDefault(k.Group, group) == group && (k.Kind == kindHTTP || k.Kind == kindGRPC) {
				if !l.takes(string(k.Kind)) {
					l.kinds = append(l.kinds, gatewayv1.RouteGroupKind{Group: ptr(gatewayv1.Group(group)), Kind: k.Kind})
				}
			} else {
				bad = true
			}
		}
		if bad {
			resolved = condition(string(gatewayv1.ListenerConditionResolvedRefs), false, string(gatewayv1.ListenerReasonInvalidRouteKinds), "Sluice serves HTTPRoute and GRPCRoute (group gateway.networking.k8s.io) alone", gen)
		}
	}
	if l.kinds == nil || spec.Protocol != gatewayv1.HTTPProtocolType && spec.Protocol != gatewayv1.HTTPSProtocolType {
		// supportedKinds is required, empty when none is: a listener of a
		// protocol Sluice does not serve takes no route.
		l.kinds = []gatewayv1.RouteGroupKind{}
	}
	l.conds = []metav1.Condition{accepted, resolved}
}

// takes reports whether the listener takes routes of kind (of the
// Gateway API's group).
func (l *listener) takes(kind string) bool {
	return slices.ContainsFunc(l.kinds, func(k gatewayv1.RouteGroupKind) bool { return string(k.Kind) == kind })
}

// certificates resolves an HTTPS listener's certificateRefs into files of
// the result, returning the ResolvedRefs reason and message of a failure.
func (t *translation) certificates(g *gw, l *listener) (gatewayv1.ListenerConditionReason, string) {
	refs := l.spec.TLS.CertificateRefs
	if len(refs) == 0 {
		return gatewayv1.ListenerReasonInvalidCertificateRef, "an HTTPS listener needs a certificateRef"
	}
	for _, ref := range refs {
		if orDefault(ref.Group, "") != "" || orDefault(ref.Kind, kindSec) != kindSec {
			return gatewayv1.ListenerReasonInvalidCertificateRef, "certificateRefs name Secrets (group \"\", kind Secret) alone"
		}
		ns := orDefault(ref.Namespace, g.obj.Namespace)
		if !t.granted(kindGW, g.obj.Namespace, "", kindSec, ns, string(ref.Name)) {
			return gatewayv1.ListenerReasonRefNotPermitted, fmt.Sprintf("no ReferenceGrant in namespace %s lets Gateways of %s refer to Secret %s", ns, g.obj.Namespace, ref.Name)
		}
		key := types.NamespacedName{Namespace: ns, Name: string(ref.Name)}
		s := t.secrets[key]
		if s == nil {
			return gatewayv1.ListenerReasonInvalidCertificateRef, "Secret " + quoteName(key) + " not found"
		}
		crt, k := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
		if _, err := tls.X509KeyPair(crt, k); err != nil {
			return gatewayv1.ListenerReasonInvalidCertificateRef, "Secret " + quoteName(key) + " holds no valid tls.crt and tls.key: " + err.Error()
		}
		base := tlsDirRel + "/" + ns + "_" + string(ref.Name)
		t.res.Files[base+".crt"], t.res.Files[base+".key"] = crt, k
		l.certs = append(l.certs, certFiles{cert: base + ".crt", key: base + ".key"})
	}
	return "", ""
}

// conflicts marks the listeners of g that share a port with another of
// another protocol, or a port, protocol and hostname.
func (t *translation) conflicts(g *gw) {
	gen := g.obj.Generation
	for _, l := range g.listeners {
		reason := gatewayv1.ListenerReasonNoConflicts
		for _, o := range g.listeners {
			if o == l || o.spec.Port != l.spec.Port {
				continue
			}
			if o.spec.Protocol != l.spec.Protocol {
				reason = gatewayv1.ListenerReasonProtocolConflict
				break
			}
			if o.hostname == l.hostname {
				reason = gatewayv1.ListenerReasonHostnameConflict
			}
		}
		conflicted := reason != gatewayv1.ListenerReasonNoConflicts
		if conflicted {
			l.valid = false
		}
		l.conds = append(l.conds, condition(string(gatewayv1.ListenerConditionConflicted), conflicted, string(reason), map[bool]string{true: "another listener on port " + strconv.Itoa(int(l.spec.Port)) + " conflicts with it", false: "no conflict"}[conflicted], gen))
	}
}

// allows reports whether the listener takes routes from namespace ns.
func (t *translation) allows(l *listener, ns string) bool {
	from := gatewayv1.NamespacesFromSame
	var sel *metav1.LabelSelector
	if ar := l.spec.AllowedRoutes; ar != nil && ar.Namespaces != nil {
		if ar.Namespaces.From != nil {
			from = *ar.Namespaces.From
		}
		sel = ar.Namespaces.Selector
	}
	switch from {
	case gatewayv1.NamespacesFromAll:
		return true
	case gatewayv1.NamespacesFromSame:
		return ns == l.gw.obj.Namespace
	case gatewayv1.NamespacesFromSelector:
		if sel == nil {
			return false
		}
		s, err := metav1.LabelSelectorAsSelector(sel)
		n := t.namespaces[ns]
		return err == nil && n != nil && s.Matches(labels.Set(n.Labels))
	}
	return false
}

// finish writes the listeners' status, once routes have attached.
func (t *translation) finish() {
	for _, g := range t.gws {
		gen := g.obj.Generation
		for _, l := range g.listeners {
			prog := condition(string(gatewayv1.ListenerConditionProgrammed), true, string(gatewayv1.ListenerReasonProgrammed), "programmed", gen)
			if !l.valid {
				prog = condition(string(gatewayv1.ListenerConditionProgrammed), false, string(gatewayv1.ListenerReasonInvalid), "not programmed: see the other conditions", gen)
			}
			g.status.Listeners = append(g.status.Listeners, gatewayv1.ListenerStatus{
				Name:           l.spec.Name,
				SupportedKinds: l.kinds,
				AttachedRoutes: l.attached,
				Conditions:     append(slices.Clone(l.conds), prog),
			})
		}
		t.res.Gateways[nn(g.obj)] = g.status
	}
}
