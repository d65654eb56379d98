package config

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Address is one address to listen on.
type Address struct {
	Network string // "tcp" or "unix"
	Addr    string // host:port, or the socket's path
}

// String returns the address as a config file writes it: "host:port" or
// "unix:/path".
func (a Address) String() string {
	if a.Network == "unix" {
		return "unix:" + a.Addr
	}
	return a.Addr
}

func (p *parser) listen(n *yaml.Node) {
	n = deref(n)
	var elems []*yaml.Node
	switch n.Kind {
	case yaml.ScalarNode, yaml.MappingNode:
		elems = []*yaml.Node{n}
	case yaml.SequenceNode:
		elems = n.Content
	}
	if len(elems) == 0 {
		p.errorf(n, "listen: want an address (host:port, :port or unix:/path), a map with an address and its options, or a list of them, got %s", describe(n))
		return
	}
	seen := map[Address]*yaml.Node{}
	p.cfg.Listen = []Address{}
	var redirects []*yaml.Node // entries with redirect_to_https: true
	for _, e := range elems {
		var opts *ListenOptions
		var redirect *yaml.Node
		addrNode := e
		if deref(e).Kind == yaml.MappingNode {
			addrNode, opts, redirect = p.listenEntry(e)
			if addrNode == nil {
				continue
			}
		}
		s, ok := p.scalar(addrNode, "listen", "an address")
		if !ok {
			continue
		}
		a, err := ParseAddress(s)
		if err != nil {
			p.errorf(addrNode, "listen: %v", err)
			continue
		}
		if a.Network == "unix" {
			a.Addr = p.path(a.Addr)
		}
		if prev := seen[a]; prev != nil {
			p.errorf(addrNode, "listen: %s is already listed at %d:%d", s, prev.Line, prev.Column)
			continue
		}
		seen[a] = deref(addrNode)
		p.cfg.Listen = append(p.cfg.Listen, a)
		if opts != nil {
			if p.cfg.ListenOptions == nil {
				p.cfg.ListenOptions = map[Address]*ListenOptions{}
			}
			p.cfg.ListenOptions[a] = opts
		}
		if redirect != nil {
			redirects = append(redirects, redirect)
		}
	}
	if len(redirects) > 0 && p.cfg.HTTPSListener() == nil {
		for _, r := range redirects {
			p.errorf(r, "redirect_to_https: true redirects to the port of the config's TLS listener, and listen has none: add one, or give the port HTTPS is served on (redirect_to_https: 443)")
		}
	}
}

// ParseAddress parses a listen address: "host:port", ":port",
// "[ipv6]:port" or "unix:/path/to/socket".
func ParseAddress(s string) (Address, error) {
	if path, ok := strings.CutPrefix(s, "unix:"); ok {
		if path == "" {
			return Address{}, fmt.Errorf("bad address %q: want unix:/path/to/socket", s)
		}
		return Address{Network: "unix", Addr: path}, nil
	}
	if scheme, rest, ok := strings.Cut(s, "://"); ok && (scheme == "http" || scheme == "https") {
		hostport, _, _ := strings.Cut(rest, "/")
		if _, _, err := net.SplitHostPort(hostport); err != nil && hostport != "" {
			hostport = net.JoinHostPort(strings.Trim(hostport, "[]"), map[string]string{"http": "80", "https": "443"}[scheme])
		}
		if _, err := ParseAddress(hostport); err != nil || strings.Contains(hostport, "://") {
			hostport = "host:port"
		}
		return Address{}, fmt.Errorf("bad address %q: a listen address is no URL: write %s (with tls: {...} in the entry to serve HTTPS)", s, hostport)
	}
	host, port, err := net.SplitHostPort(s)
	switch {
	case err == nil && host == "*":
		return Address{}, fmt.Errorf("bad address %q: every interface is written :%s, without the *", s, port)
	case err == nil:
	case s != "" && strings.Trim(s, "0123456789") == "":
		return Address{}, fmt.Errorf("bad address %q: a port alone is written :%s (every interface) or host:%s", s, s, s)
	case s != "" && !strings.ContainsAny(s, ":/ []"):
		return Address{}, fmt.Errorf("bad address %q: a host needs a port, %s:PORT (or :PORT for every interface)", s, s)
	default:
		return Address{}, fmt.Errorf("bad address %q: want host:port, :port or unix:/path", s)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return Address{}, fmt.Errorf("bad address %q: the port must be a number from 0 to 65535", s)
	}
	if strings.ContainsAny(host, " /") {
		return Address{}, fmt.Errorf("bad address %q: bad host %q", s, host)
	}
	return Address{Network: "tcp", Addr: s}, nil
}
