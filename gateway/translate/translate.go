// Package translate turns a snapshot of Gateway API objects (GatewayClasses,
// Gateways, HTTPRoutes, GRPCRoutes, ReferenceGrants) and the cluster objects they name
// (Namespaces, Services, EndpointSlices, Secrets) into a Sluice config and
// the status each Gateway API object should have.
//
// Translate is a pure function: it reads the snapshot, never changes it,
// and returns everything the controller needs to apply (the config's YAML
// text, the hosts of each upstream set, the TLS files the config names)
// and to write back (status conditions, without lastTransitionTime, which
// the writer keeps when a condition does not change).
//
// The data plane is one Sluice server. Each Gateway gets an address of its
// own from a pool (Options.AddressPool), and each of its listeners a listen
// entry on that address. Every route the translation writes has a local
// condition on the address and port of the listener it came through, so
// the routes of one Gateway and port never answer on another's, though
// the Gateways share one routing table.
package translate

import (
	"cmp"
	"fmt"
	"net/netip"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
)

// Snapshot is the objects a translation reads. The slices may be in any
// order and may hold objects the translation has no use for (Gateways of
// another controller's classes, Secrets no listener names). Translate does
// not modify them.
type Snapshot struct {
	GatewayClasses  []*gatewayv1.GatewayClass
	Gateways        []*gatewayv1.Gateway
	HTTPRoutes      []*gatewayv1.HTTPRoute
	GRPCRoutes      []*gatewayv1.GRPCRoute
	ReferenceGrants []*gatewayv1.ReferenceGrant
	Namespaces      []*corev1.Namespace
	Services        []*corev1.Service
	EndpointSlices  []*discoveryv1.EndpointSlice
	Secrets         []*corev1.Secret
}

// Options are the settings of a translation that do not come from the
// cluster.
type Options struct {
	// ControllerName is the GatewayClass controllerName this controller
	// owns ("sluice-server.dev/gateway-controller"); classes naming another
	// are left alone.
	ControllerName string

	// AddressPool is the range the Gateways' addresses are taken from,
	// one each: addresses the data plane can bind (10.245.0.0/24 routed
	// to it). Its first address (the network's) is never given out.
	AddressPool netip.Prefix

	// AdminSocket, when set, is written as the config's admin section
	// (admin: {socket: AdminSocket}), so that the config loaded keeps
	// the API the controller drives.
	AdminSocket string

	// AdminState, when set with AdminSocket, is the admin section's
	// state file. The section is read when the data plane starts and a
	// config that changes it draws a warning: write what its first
	// config has.
	AdminState string

	// IdleListen is the listen address of a config with no listener to
	// serve (no Gateway programmed), since a Sluice config needs one;
	// "127.0.0.1:0" when empty.
	IdleListen string
}

// Host is one host of an upstream set, as the admin API's
// PUT /upstreams/NAME takes it.
type Host struct {
	Name   string `json:"name"`
	Weight int    `json:"weight,omitempty"`
}

// Result is what a translation gives. Its maps are the translation's own
// and the caller may keep them.
type Result struct {
	// Config is the Sluice config, YAML text.
	Config []byte

	// Upstreams are the hosts of every upstream set the config names, by
	// set name: the part of the config that endpoint changes alone
	// change, applied without a reload by PUT /upstreams/NAME.
	Upstreams map[string][]Host

	// Files are the files the config names (TLS certificates and keys),
	// by path relative to the config file's directory, with their
	// content. The caller writes them there before loading the config.
	Files map[string][]byte

	// GatewayClasses, Gateways, HTTPRoutes and GRPCRoutes are the status each object
	// should have, for those this controller owns. Conditions carry
	// ObservedGeneration but no LastTransitionTime. A route's status
	// holds only the parents that are this controller's Gateways: the
	// writer keeps the entries of other controllers.
	GatewayClasses map[string]gatewayv1.GatewayClassStatus
	Gateways       map[types.NamespacedName]gatewayv1.GatewayStatus
	HTTPRoutes     map[types.NamespacedName]gatewayv1.HTTPRouteStatus
	GRPCRoutes     map[types.NamespacedName]gatewayv1.GRPCRouteStatus

	// Skeleton is Config with every upstream set's hosts left out: two
	// results with equal skeletons differ in their upstream hosts alone,
	// which the controller applies without loading a config.
	Skeleton []byte
}

const (
	group     = gatewayv1.GroupName
	kindHTTP  = "HTTPRoute"
	kindGRPC  = "GRPCRoute"
	kindGW    = "Gateway"
	kindSvc   = "Service"
	kindSec   = "Secret"
	idleIPv4  = "127.0.0.1:0"
	tlsDirRel = "tls"
)

// Translate translates snap as opts say. It never fails: what cannot be
// served is reported in the status of the object at fault, and the config
// serves the rest.
func Translate(snap *Snapshot, opts Options) *Result {
	t := &translation{
		snap:  snap,
		opts:  opts,
		res:   &Result{Upstreams: map[string][]Host{}, Files: map[string][]byte{}, GatewayClasses: map[string]gatewayv1.GatewayClassStatus{}, Gateways: map[types.NamespacedName]gatewayv1.GatewayStatus{}, HTTPRoutes: map[types.NamespacedName]gatewayv1.HTTPRouteStatus{}, GRPCRoutes: map[types.NamespacedName]gatewayv1.GRPCRouteStatus{}},
		hosts: map[string][]*entry{},
	}
	t.index()
	t.classes()
	t.gateways()
	t.routes()
	t.emit()
	return t.res
}

type translation struct {
	snap *Snapshot
	opts Options
	res  *Result

	ourClasses map[string]bool
	namespaces map[string]*corev1.Namespace
	services   map[types.NamespacedName]*corev1.Service
	slices     map[types.NamespacedName][]*discoveryv1.EndpointSlice // by service
	secrets    map[types.NamespacedName]*corev1.Secret

	gws       []*gw                           // this controller's Gateways, oldest first
	gwMap     map[types.NamespacedName]*gw    // the same, by name
	hosts     map[string][]*entry             // route entries by hostname ("" for any)
	seen      map[string]bool                 // entries added, against a route attached twice
	grpc      map[*gatewayv1.HTTPRoute]string // the routes made from GRPCRoutes: why each cannot be served, or ""
	tls       map[string]*tlsListen           // HTTPS listen entries by address
	plain     []string                        // plain listen addresses, in order
	plainSeen map[string]bool

	// listenHosts holds the hostnames of the listeners served at each
	// address and port ("" for any host).
	listenHosts map[string][]string
}

func nn(o metav1.Object) types.NamespacedName {
	return types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
}

func (t *translation) index() {
	t.namespaces = map[string]*corev1.Namespace{}
	for _, n := range t.snap.Namespaces {
		t.namespaces[n.Name] = n
	}
	t.services = map[types.NamespacedName]*corev1.Service{}
	for _, s := range t.snap.Services {
		t.services[nn(s)] = s
	}
	t.slices = map[types.NamespacedName][]*discoveryv1.EndpointSlice{}
	for _, s := range t.snap.EndpointSlices {
		svc := s.Labels[discoveryv1.LabelServiceName]
		if svc == "" {
			continue
		}
		k := types.NamespacedName{Namespace: s.Namespace, Name: svc}
		t.slices[k] = append(t.slices[k], s)
	}
	t.secrets = map[types.NamespacedName]*corev1.Secret{}
	for _, s := range t.snap.Secrets {
		t.secrets[nn(s)] = s
	}
	t.seen = map[string]bool{}
	t.tls = map[string]*tlsListen{}
	t.plainSeen = map[string]bool{}
	t.listenHosts = map[string][]string{}
}

// condition returns a condition of the type, status and reason, with
// ObservedGeneration gen and no LastTransitionTime.
func condition(typ string, ok bool, reason, msg string, gen int64) metav1.Condition {
	s := metav1.ConditionFalse
	if ok {
		s = metav1.ConditionTrue
	}
	return metav1.Condition{Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: gen}
}

// SupportedFeatures are the Gateway API conformance features Sluice
// claims, sorted, as a GatewayClass's status lists them. Left out:
// those of docs/kubernetes.md's gaps (mirroring, timeouts, retries, CORS, static addresses, backend
// protocols but WebSocket).
var SupportedFeatures = []gatewayv1.FeatureName{
	"Gateway",
	"GatewayHTTPListenerIsolation",
	"GatewayPort8080",
	"HTTPRoute",
	"HTTPRoute303RedirectStatusCode",
	"HTTPRoute307RedirectStatusCode",
	"HTTPRoute308RedirectStatusCode",
	"HTTPRouteBackendProtocolWebSocket",
	"HTTPRouteHostRewrite",
	"HTTPRouteMethodMatching",
	"HTTPRouteNamedRouteRule",
	"HTTPRouteParentRefPort",
	"HTTPRoutePathRedirect",
	"HTTPRoutePathRewrite",
	"HTTPRoutePortRedirect",
	"HTTPRouteQueryParamMatching",
	"HTTPRouteResponseHeaderModification",
	"HTTPRouteSchemeRedirect",
	"ReferenceGrant",
}

func (t *translation) classes() {
	t.ourClasses = map[string]bool{}
	for _, c := range t.snap.GatewayClasses {
		if string(c.Spec.ControllerName) != t.opts.ControllerName {
			continue
		}
		t.ourClasses[c.Name] = true
		st := gatewayv1.GatewayClassStatus{Conditions: []metav1.Condition{
			condition(string(gatewayv1.GatewayClassConditionStatusAccepted), true, string(gatewayv1.GatewayClassReasonAccepted), "Sluice serves this class", c.Generation),
		}}
		for _, f := range SupportedFeatures {
			st.SupportedFeatures = append(st.SupportedFeatures, gatewayv1.SupportedFeature{Name: f})
		}
		if c.Spec.ParametersRef != nil {
			st.Conditions[0] = condition(string(gatewayv1.GatewayClassConditionStatusAccepted), false, string(gatewayv1.GatewayClassReasonInvalidParameters), "Sluice's class takes no parameters: remove parametersRef", c.Generation)
		}
		t.res.GatewayClasses[c.Name] = st
	}
}

// olderFirst orders objects as the Gateway API breaks ties: the oldest
// first, then by namespace and name.
func olderFirst(a, b metav1.Object) int {
	ta, tb := a.GetCreationTimestamp(), b.GetCreationTimestamp()
	if !ta.Equal(&tb) {
		if ta.Before(&tb) {
			return -1
		}
		return 1
	}
	return cmp.Or(strings.Compare(a.GetNamespace(), b.GetNamespace()), strings.Compare(a.GetName(), b.GetName()))
}

// granted reports whether a ReferenceGrant in the target's namespace lets
// objects of fromKind in fromNS refer to the target (of group toGroup and
// kind toKind, named name).
func (t *translation) granted(fromKind, fromNS, toGroup, toKind, toNS, name string) bool {
	if fromNS == toNS {
		return true
	}
	for _, g := range t.snap.ReferenceGrants {
		if g.Namespace != toNS {
			continue
		}
		from := slices.ContainsFunc(g.Spec.From, func(f gatewayv1.ReferenceGrantFrom) bool {
			return string(f.Group) == group && string(f.Kind) == fromKind && string(f.Namespace) == fromNS
		})
		if !from {
			continue
		}
		if slices.ContainsFunc(g.Spec.To, func(to gatewayv1.ReferenceGrantTo) bool {
			return string(to.Group) == toGroup && string(to.Kind) == toKind && (to.Name == nil || string(*to.Name) == name)
		}) {
			return true
		}
	}
	return false
}

func orDefault[T ~string](p *T, def string) string {
	if p == nil {
		return def
	}
	return string(*p)
}

// ensureHost lowers a hostname, the form Sluice compares.
func lowerHost(h string) string { return strings.ToLower(strings.TrimSuffix(h, ".")) }

var hostnameRE = regexp.MustCompile(`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)

// validHostname reports whether h (lowered) is a hostname as the Gateway
// API's schema has them, a leading "*." allowed when wildcard.
func validHostname(h string, wildcard bool) bool {
	return len(h) <= 253 && hostnameRE.MatchString(h) && (wildcard || !strings.HasPrefix(h, "*."))
}

// hostMatches reports whether the hostname pattern p (exact, or *.suffix
// for any subdomain at any depth) matches h, which may be a wildcard too
// (matched by p when p's suffix covers it).
func hostMatches(p, h string) bool {
	if p == h {
		return true
	}
	if suf, ok := strings.CutPrefix(p, "*"); ok {
		return strings.HasSuffix(h, suf) && len(h) > len(suf)
	}
	return false
}

// intersect returns the hostnames a route of hostnames rs serves through a
// listener of hostname l ("" for any): nil when they share none, [""]
// when both take any host.
func intersect(l string, rs []string) []string {
	if len(rs) == 0 {
		return []string{l}
	}
	var out []string
	for _, r := range rs {
		switch {
		case l == "":
			out = append(out, r)
		case hostMatches(l, r):
			out = append(out, r)
		case hostMatches(r, l):
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// endpoints returns the ready addresses of the service's EndpointSlices
// for its port of number port, as upstream URLs, sorted, and whether the
// service has that port.
func (t *translation) endpoints(svc *corev1.Service, port int32) ([]string, bool) {
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port && (svc.Spec.Ports[i].Protocol == "" || svc.Spec.Ports[i].Protocol == corev1.ProtocolTCP) {
			sp = &svc.Spec.Ports[i]
		}
	}
	if sp == nil {
		return nil, false
	}
	var out []string
	for _, s := range t.slices[nn(svc)] {
		if s.AddressType != discoveryv1.AddressTypeIPv4 && s.AddressType != discoveryv1.AddressTypeIPv6 {
			continue
		}
		var target int32 = -1
		for _, p := range s.Ports {
			if orDefault(p.Name, "") == sp.Name && p.Port != nil && (p.Protocol == nil || *p.Protocol == corev1.ProtocolTCP) {
				target = *p.Port
			}
		}
		if target < 0 {
			continue
		}
		for _, e := range s.Endpoints {
			if e.Conditions.Ready != nil && !*e.Conditions.Ready || len(e.Addresses) == 0 {
				continue
			}
			a, err := netip.ParseAddr(e.Addresses[0])
			if err != nil {
				continue
			}
			out = append(out, "http://"+netip.AddrPortFrom(a, uint16(target)).String())
		}
	}
	slices.Sort(out)
	return slices.Compact(out), true
}

func quoteName(k types.NamespacedName) string { return fmt.Sprintf("%s/%s", k.Namespace, k.Name) }
