package config

import (
	"crypto/x509"
	"fmt"
	"net"
	"net/mail"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
)

// LetsEncrypt is the directory an acme section uses when it names none:
// Let's Encrypt's production service.
const LetsEncrypt = "https://acme-v02.api.letsencrypt.org/directory"

// ACMEKeys are the keys of a tls section's acme section.
var ACMEKeys = []string{"email", "domains", "directory", "data", "ca_roots"}

// ACME is the acme section of a tls section: certificates obtained and
// renewed from an ACME certificate authority (RFC 8555) rather than
// read from files.
type ACME struct {
	// Email is the contact address of the ACME account, where the
	// authority writes about expiring certificates; may be empty.
	Email string

	// Domains are the host names certificates are obtained for: the
	// server names (SNI) the listener answers. No wildcards, no IP
	// addresses: HTTP-01 and TLS-ALPN-01 cannot prove them.
	Domains []string

	// Directory is the URL of the authority's ACME directory;
	// LetsEncrypt when not given.
	Directory string

	// Data is the directory certificates and the account key are kept in,
	// resolved against the config file's directory; by default "acme"
	// under $STATE_DIRECTORY (a systemd unit's StateDirectory=), or else
	// "sluice/acme" under the user's cache directory (os.UserCacheDir).
	Data string

	// CARoots, if set, is a PEM file of the roots that the directory's
	// HTTPS certificate chains to (a private authority, such as a test
	// one); nil means the system's roots. CARootsFile is its name.
	CARoots     *x509.CertPool
	CARootsFile string
}

// Key returns a string that is equal for two ACME sections that share
// their certificates: the same authority, account and data directory.
func (a *ACME) Key() string {
	return strings.Join([]string{a.Directory, a.Email, a.Data, a.CARootsFile, strings.Join(a.Domains, ",")}, "\n")
}

// acme reads an acme section.
func (p *parser) acme(key, n *yaml.Node) *ACME {
	pairs, ok := p.mapping(n, "tls.acme key", ACMEKeys)
	if !ok {
		return nil
	}
	a := &ACME{Directory: LetsEncrypt}
	var domains *yaml.Node
	for _, kv := range pairs {
		switch kv.key.Value {
		case "email":
			if s, ok := p.scalar(kv.val, "tls.acme.email", "an email address"); ok {
				if _, err := mail.ParseAddress(s); err != nil || strings.ContainsAny(s, "<> ") {
					p.errorf(kv.val, "tls.acme.email: want an email address such as admin@example.com, got %q", s)
				}
				a.Email = s
			}
		case "domains":
			domains = kv.val
			for i, d := range p.stringList(kv.val, "tls.acme.domains") {
				at := kv.val
				if l := deref(kv.val); l.Kind == yaml.SequenceNode {
					at = l.Content[i]
				}
				if msg := badACMEDomain(d); msg != "" {
					p.errorf(at, "tls.acme.domains: %q %s", d, msg)
					continue
				}
				a.Domains = append(a.Domains, strings.ToLower(strings.TrimSuffix(d, ".")))
			}
		case "directory":
			if s, ok := p.scalar(kv.val, "tls.acme.directory", "the URL of an ACME directory"); ok {
				u, err := url.Parse(s)
				if err != nil || u.Scheme != "https" || u.Host == "" {
					p.errorf(kv.val, "tls.acme.directory: want the https URL of an ACME directory, e.g. %s, got %q", LetsEncrypt, s)
				}
				a.Directory = s
			}
		case "data":
			if s, ok := p.scalar(kv.val, "tls.acme.data", "a directory"); ok {
				a.Data = p.path(s)
			}
		case "ca_roots":
			if s, ok := p.scalar(kv.val, "tls.acme.ca_roots", "a PEM file of certificates"); ok {
				a.CARootsFile = p.path(s)
				pem, err := os.ReadFile(a.CARootsFile)
				if err != nil {
					p.errorf(kv.val, "tls.acme.ca_roots: %s", withFix(err))
					break
				}
				a.CARoots = x509.NewCertPool()
				if !a.CARoots.AppendCertsFromPEM(pem) {
					p.errorf(kv.val, "tls.acme.ca_roots: %s holds no PEM certificate", s)
				}
			}
		}
	}
	if domains == nil {
		p.errorf(key, "tls.acme: want domains, the host names to obtain certificates for, e.g. acme: {email: admin@example.com, domains: [example.com, www.example.com]}")
	} else if len(a.Domains) == 0 && len(p.errs) == 0 {
		p.errorf(domains, "tls.acme.domains: want at least one host name")
	}
	if a.Data == "" {
		if dir, err := defaultACMEData(); err == nil {
			a.Data = dir
		} else {
			p.errorf(key, "tls.acme: no data directory to keep certificates in (%v): give one, data: DIR", err)
		}
	}
	return a
}

// defaultACMEData returns the data directory of an acme section that
// names none: "acme" in the service's state directory when systemd gives
// it one (StateDirectory=, which sets $STATE_DIRECTORY: the first path,
// if it lists several), "sluice/acme" in the user's cache directory
// otherwise.
func defaultACMEData() (string, error) {
	if s, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(s) {
		return filepath.Join(s, "acme"), nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "sluice", "acme"), nil
}

// badACMEDomain says why d cannot be given a certificate by HTTP-01 or
// TLS-ALPN-01, or returns "".
func badACMEDomain(d string) string {
	switch {
	case strings.Contains(d, "*"):
		return "is a wildcard: wildcard certificates need the DNS-01 challenge, which Sluice does not answer; list each name"
	case net.ParseIP(strings.Trim(d, "[]")) != nil:
		return "is an IP address: give a host name"
	case !strings.Contains(strings.Trim(d, "."), "."):
		return "is not a fully qualified name (no dot): an ACME authority issues certificates for names such as example.com"
	}
	for _, label := range strings.Split(strings.TrimSuffix(d, "."), ".") {
		if label == "" || len(label) > 63 || strings.HasPrefix(label, "-") || strings.HasSuffix(label, "-") {
			return "is not a valid host name"
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return "is not a valid host name (letters, digits and hyphens)"
			}
		}
	}
	return ""
}

// String describes a for Explain.
func (a *ACME) String() string {
	return fmt.Sprintf("ACME %s from %s", strings.Join(a.Domains, " "), a.Directory)
}

// ACMESections returns the acme sections of c's listeners, in the order
// of Listen, each section once (by Key): the certificates to obtain.
func (c *Config) ACMESections() []*ACME {
	var out []*ACME
	seen := map[string]bool{}
	for _, a := range c.Listen {
		if o := c.ListenOptions[a]; o != nil && o.TLS != nil && o.TLS.ACME != nil && !seen[o.TLS.ACME.Key()] {
			seen[o.TLS.ACME.Key()] = true
			out = append(out, o.TLS.ACME)
		}
	}
	return out
}
