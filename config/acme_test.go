package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// tls.acme is read with its defaults: Let's Encrypt's directory and a
// data directory under the user's cache directory.
func TestParseACME(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "")
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.WriteFiles(t, dir)
	cfg, err := parseString(t, dir, `listen:
  - {address: ":80", redirect_to_https: true}
  - address: ":443"
    tls: {acme: {email: admin@example.com, domains: [Example.com, www.example.com.]}}
  - address: ":8443"
    tls: {acme: {domains: example.org, directory: "https://acme.test/dir", data: certs, ca_roots: ca.crt}}
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	a := cfg.ListenOptions[Address{"tcp", ":443"}].TLS.ACME
	cache, _ := os.UserCacheDir()
	if a == nil || a.Email != "admin@example.com" || strings.Join(a.Domains, " ") != "example.com www.example.com" ||
		a.Directory != LetsEncrypt || a.Data != filepath.Join(cache, "sluice", "acme") || a.CARoots != nil {
		t.Errorf(":443: %+v", a)
	}
	b := cfg.ListenOptions[Address{"tcp", ":8443"}].TLS.ACME
	if b == nil || b.Directory != "https://acme.test/dir" || b.Data != filepath.Join(dir, "certs") || b.CARoots == nil || b.Key() == a.Key() {
		t.Errorf(":8443: %+v", b)
	}
	var sb strings.Builder
	cfg.Explain(&sb)
	if got := sb.String(); !strings.Contains(got, "TLS, ACME example.com www.example.com from "+LetsEncrypt) {
		t.Errorf("Explain does not describe the acme section:\n%s", got)
	}
}

// Under a systemd unit with StateDirectory= ($STATE_DIRECTORY set), an
// acme section without data keeps its certificates in the state
// directory; data given is data kept.
func TestACMEDataStateDirectory(t *testing.T) {
	cache, _ := os.UserCacheDir()
	for _, c := range []struct {
		state, data, want string
	}{
		{"", "", filepath.Join(cache, "sluice", "acme")},
		{"/var/lib/sluice", "", "/var/lib/sluice/acme"},
		{"/var/lib/sluice:/var/lib/other", "", "/var/lib/sluice/acme"},
		{"relative/dir", "", filepath.Join(cache, "sluice", "acme")},
		{"/var/lib/sluice", "/srv/acme", "/srv/acme"},
	} {
		t.Setenv("STATE_DIRECTORY", c.state)
		data := ""
		if c.data != "" {
			data = ", data: " + c.data
		}
		cfg, err := parseString(t, t.TempDir(), "listen:\n  - address: \":443\"\n    tls: {acme: {domains: [example.com]"+data+"}}\n"+tlsRoutes)
		if err != nil {
			t.Fatal(err)
		}
		if a := cfg.ListenOptions[Address{"tcp", ":443"}].TLS.ACME; a.Data != c.want {
			t.Errorf("STATE_DIRECTORY=%q, data %q: Data = %q, want %q", c.state, c.data, a.Data, c.want)
		}
	}
}

// ACMESections lists each acme section once, as the master of workers
// obtains their certificates.
func TestACMESections(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseString(t, dir, `workers: 2
listen:
  - {address: ":443", tls: {acme: {domains: [example.com], data: acme}}}
  - {address: ":8443", tls: {acme: {domains: [example.com], data: acme}}}
  - {address: ":9443", tls: {acme: {domains: [example.org], data: acme}}}
  - ":80"
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	got := cfg.ACMESections()
	if len(got) != 2 || got[0].Domains[0] != "example.com" || got[1].Domains[0] != "example.org" {
		t.Errorf("ACMESections: %v", got)
	}
}

func TestParseACMEErrors(t *testing.T) {
	dir := t.TempDir()
	sluicetest.NewCA(t).IssueFiles(t, dir, "a.example")
	for _, tc := range []struct{ text, want string }{
		{"listen: {address: \":1\", tls: {acme: {email: admin@example.com}}}", "test.yaml:1:31: tls.acme: want domains"},
		{"listen: {address: \":1\", tls: {acme: {domains: []}}}", "test.yaml:1:47: tls.acme.domains: want at least one host name"},
		{"listen: {address: \":1\", tls: {acme: {domains: [\"*.example.com\"]}}}", `test.yaml:1:48: tls.acme.domains: "*.example.com" is a wildcard`},
		{"listen: {address: \":1\", tls: {acme: {domains: [127.0.0.1]}}}", `test.yaml:1:48: tls.acme.domains: "127.0.0.1" is an IP address`},
		{"listen: {address: \":1\", tls: {acme: {domains: [localhost]}}}", `test.yaml:1:48: tls.acme.domains: "localhost" is not a fully qualified name`},
		{"listen: {address: \":1\", tls: {acme: {domains: [a_b.example]}}}", `test.yaml:1:48: tls.acme.domains: "a_b.example" is not a valid host name`},
		{"listen: {address: \":1\", tls: {acme: {domains: [a.example], email: admin}}}", `test.yaml:1:67: tls.acme.email: want an email address`},
		{"listen: {address: \":1\", tls: {acme: {domains: [a.example], directory: \"http://acme.test/dir\"}}}", `test.yaml:1:71: tls.acme.directory: want the https URL`},
		{"listen: {address: \":1\", tls: {acme: {domains: [a.example], ca_roots: missing.pem}}}", `test.yaml:1:70: tls.acme.ca_roots: open`},
		{"listen: {address: \":1\", tls: {acme: {domains: [a.example], renew: 30d}}}", `test.yaml:1:60: unknown tls.acme key "renew"`},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key, acme: {domains: [a.example]}}}", "test.yaml:1:72: tls: give acme, or certificates from files"},
	} {
		_, err := parseString(t, dir, tc.text+tlsRoutes)
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), filepath.Join(dir, tc.want)) {
			t.Errorf("%s:\ngot  %v\nwant %s", tc.text, err, filepath.Join(dir, tc.want))
		}
	}
}
