package components

import (
	"fmt"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/sluice-server/sluice/clientaddr"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "ipfilter", Kind: KindPipe, Scalar: "allow", Stops: "403",
		Example: `ipfilter: {allow: [10.0.0.0/8, 192.168.0.0/16], deny: [10.6.0.0/16]}`,
	}, func(o IPFilterOptions, _ Context) (pipe.Component, error) { return NewIPFilter(o) })
}

// IPFilterOptions configures NewIPFilter.
type IPFilterOptions struct {
	// Allow lists the clients let through: CIDRs ("10.0.0.0/8",
	// "2001:db8::/32"), single addresses ("192.0.2.7", "::1") or "all".
	Allow []string `yaml:"allow"`

	// Deny lists the clients refused, in the same forms as Allow.
	Deny []string `yaml:"deny"`

	// TrustedProxies lists the reverse proxies (CIDRs or addresses, and
	// "unix:" for any peer on a Unix socket) whose client-address header
	// is believed. Empty: the peer is the client and no header is read.
	TrustedProxies []string `yaml:"trusted_proxies"`

	// ClientIPHeader is the header trusted proxies put the client address
	// in: "X-Forwarded-For" (the default) or "Forwarded" (RFC 7239), read
	// from the right, skipping trusted proxies.
	ClientIPHeader string `yaml:"client_ip_header"`
}

// NewIPFilter returns a Pipe that lets a request through only if its
// client address is allowed, and answers the others 403 Forbidden.
//
// # Evaluation
//
// The most specific entry that contains the client address decides, as
// in a routing table: the entry with the longest prefix, whichever list
// it is in, and deny when an address is in both lists with the same
// prefix length. So the order of the entries does not matter, and
//
//	allow: [10.0.0.0/8]
//	deny:  [10.6.0.0/16]
//
// admits 10.1.2.3 but not 10.6.2.3, while allow: [10.6.6.6] with
// deny: [all] admits only 10.6.6.6. An address no entry contains is
// refused if Allow is non-empty (Allow is then a list of the only clients
// let in) and let through if Allow is empty (Deny is a block list). IPv4
// entries match IPv4 clients, including IPv4 clients connecting over IPv6
// (::ffff:a.b.c.d); "all" is 0.0.0.0/0 and ::/0, and also the only entry
// that matches a client without an IP address (a Unix-socket peer not
// trusted as a proxy): deny: [all] refuses every client, whatever it
// connects over.
//
// This is neither nginx's first-match order nor Apache's Order directive
// (the htaccess component implements the latter): with two lists in a
// config file, order-independent longest match is the rule that does what
// the lists say, whatever order they are written in.
//
// The client address is the TCP peer's, or, when the peer is one of
// TrustedProxies, the rightmost untrusted address of ClientIPHeader.
//
// The returned Pipe is immutable and safe for concurrent use.
func NewIPFilter(opts IPFilterOptions) (pipe.Component, error) {
	f, err := newIPFilter(opts)
	if err != nil {
		return nil, err
	}
	return pipe.Pipe(f.handle), nil
}

func newIPFilter(opts IPFilterOptions) (*ipFilter, error) {
	ci, err := clientaddr.New(opts.TrustedProxies, opts.ClientIPHeader)
	if err != nil {
		return nil, fmt.Errorf("ipfilter: %w", err)
	}
	if len(opts.Allow) == 0 && len(opts.Deny) == 0 {
		return nil, fmt.Errorf("ipfilter: no allow or deny entries")
	}
	f := &ipFilter{client: ci, allowlist: len(opts.Allow) > 0}
	for _, list := range []struct {
		name  string
		addrs []string
		allow bool
	}{{"allow", opts.Allow, true}, {"deny", opts.Deny, false}} {
		for _, s := range list.addrs {
			if strings.EqualFold(strings.TrimSpace(s), "all") {
				f.rules = append(f.rules,
					ipRule{netip.PrefixFrom(netip.IPv4Unspecified(), 0), list.allow},
					ipRule{netip.PrefixFrom(netip.IPv6Unspecified(), 0), list.allow})
				continue
			}
			p, err := clientaddr.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("ipfilter: %s: %w", list.name, err)
			}
			f.rules = append(f.rules, ipRule{p, list.allow})
		}
	}
	// A client without an address matches only "all"; deny wins.
	switch {
	case ipListHasAll(opts.Deny):
		f.noAddr = false
	case ipListHasAll(opts.Allow):
		f.noAddr = true
	default:
		f.noAddr = !f.allowlist
	}
	// Longest prefix first; deny before allow at the same length. The
	// first rule that contains the address is then the one that decides.
	slices.SortStableFunc(f.rules, func(a, b ipRule) int {
		if a.prefix.Bits() != b.prefix.Bits() {
			return b.prefix.Bits() - a.prefix.Bits()
		}
		switch {
		case a.allow == b.allow:
			return 0
		case !a.allow:
			return -1
		}
		return 1
	})
	return f, nil
}

// ipFilter is the state of an ipfilter component.
type ipFilter struct {
	client    *clientaddr.Resolver
	rules     []ipRule // most specific first
	allowlist bool     // refuse addresses no rule contains
	noAddr    bool     // let through a client without an IP address
}

// ipListHasAll reports whether a list of entries has "all".
func ipListHasAll(list []string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(strings.TrimSpace(s), "all") })
}

type ipRule struct {
	prefix netip.Prefix
	allow  bool
}

// allowed reports whether a passes the filter.
func (f *ipFilter) allowed(a netip.Addr) bool {
	if !a.IsValid() {
		return f.noAddr
	}
	for _, r := range f.rules {
		if r.prefix.Contains(a) {
			return r.allow
		}
	}
	return !f.allowlist
}

func (f *ipFilter) handle(c *pipe.Conn) bool {
	if f.allowed(f.client.Addr(c.Request)) {
		return true
	}
	return c.Error(http.StatusForbidden, "access denied")
}
