package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest"
)

const tlsRoutes = "\nroutes: [{match: /, pipeline: [echo]}]\n"

// Listen entries written as maps carry TLS certificates (one, or several
// for SNI), HSTS and the HTTPS redirect.
func TestParseListenTLS(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "a.example")
	ca.IssueFiles(t, dir, "b.example")
	cfg, err := parseString(t, dir, `listen:
  - 127.0.0.1:8080
  - {address: ":8443", tls: {cert: a.example.crt, key: a.example.key}, hsts: 8760h}
  - address: ":8444"
    tls:
      certificates:
        - {cert: a.example.crt, key: a.example.key}
        - {cert: b.example.crt, key: b.example.key}
    hsts: {max_age: 1h, include_subdomains: true, preload: true}
  - {address: ":8081", redirect_to_https: true}
  - {address: ":8082", redirect_to_https: 443}
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Listen) != 5 || cfg.ListenOptions[cfg.Listen[0]] != nil {
		t.Fatalf("Listen %v, options of the plain address %v", cfg.Listen, cfg.ListenOptions[cfg.Listen[0]])
	}
	one := cfg.ListenOptions[Address{"tcp", ":8443"}]
	if one == nil || one.TLS == nil || len(one.TLS.Certificates) != 1 || one.TLS.Certificates[0].Pair.Leaf.DNSNames[0] != "a.example" ||
		one.TLS.Certificates[0].CertFile != filepath.Join(dir, "a.example.crt") {
		t.Fatalf("the :8443 entry: %+v", one)
	}
	if got := one.HSTS.Value(); got != "max-age=31536000" {
		t.Errorf("hsts: 8760h is %q", got)
	}
	two := cfg.ListenOptions[Address{"tcp", ":8444"}]
	if len(two.TLS.Certificates) != 2 || two.TLS.Certificates[1].Pair.Leaf.DNSNames[0] != "b.example" {
		t.Fatalf("the :8444 entry: %+v", two.TLS)
	}
	if got := two.HSTS.Value(); got != "max-age=3600; includeSubDomains; preload" {
		t.Errorf("hsts map is %q", got)
	}
	if r := cfg.ListenOptions[Address{"tcp", ":8081"}].RedirectToHTTPS; r == nil || r.Port != 0 {
		t.Errorf("redirect_to_https: true is %+v", r)
	}
	if r := cfg.ListenOptions[Address{"tcp", ":8082"}].RedirectToHTTPS; r == nil || r.Port != 443 {
		t.Errorf("redirect_to_https: 443 is %+v", r)
	}
	if a := cfg.HTTPSListener(); a == nil || a.Addr != ":8443" {
		t.Errorf("HTTPSListener is %v", a)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// http2: false keeps a TLS listener to HTTP/1.1; h2c: true adds HTTP/2
// with prior knowledge to a plain one.
func TestParseListenHTTP2(t *testing.T) {
	dir := t.TempDir()
	sluicetest.NewCA(t).IssueFiles(t, dir, "a.example")
	cfg, err := parseString(t, dir, `listen:
  - {address: ":8443", tls: {cert: a.example.crt, key: a.example.key}}
  - {address: ":8444", tls: {cert: a.example.crt, key: a.example.key}, http2: false}
  - {address: ":8080", h2c: true}
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.ListenOptions
	if a, b, c := o[Address{"tcp", ":8443"}], o[Address{"tcp", ":8444"}], o[Address{"tcp", ":8080"}]; a.NoHTTP2 || !b.NoHTTP2 || !c.H2C || c.TLS != nil {
		t.Errorf("options %+v, %+v, %+v", a, b, c)
	}
}

// http3: true, or a map with early_data, serves HTTP/3 beside a TLS
// listener; http3: false is as if it were not written. Explain says so.
func TestParseListenHTTP3(t *testing.T) {
	dir := t.TempDir()
	sluicetest.NewCA(t).IssueFiles(t, dir, "a.example")
	cfg, err := parseString(t, dir, `listen:
  - {address: ":8443", tls: {cert: a.example.crt, key: a.example.key}, http3: true}
  - {address: ":8444", tls: {cert: a.example.crt, key: a.example.key}, http3: {early_data: true}}
  - {address: ":8445", tls: {cert: a.example.crt, key: a.example.key}, http3: false}
  - {address: ":8446", tls: {cert: a.example.crt, key: a.example.key}, http3: {}}
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.ListenOptions
	for _, c := range []struct {
		addr      string
		want      bool
		earlyData bool
	}{{":8443", true, false}, {":8444", true, true}, {":8445", false, false}, {":8446", true, false}} {
		h := o[Address{"tcp", c.addr}].HTTP3
		if (h != nil) != c.want || h != nil && h.EarlyData != c.earlyData {
			t.Errorf("%s: http3 %+v, want on %v, early data %v", c.addr, h, c.want, c.earlyData)
		}
	}
	var sb strings.Builder
	cfg.Explain(&sb)
	if got := sb.String(); strings.Count(got, "HTTP/3") != 3 || strings.Count(got, "0-RTT") != 1 {
		t.Errorf("Explain does not list HTTP/3 three times, 0-RTT once:\n%s", got)
	}
}

// OCSP stapling is on unless ocsp_stapling: false, with files or acme.
func TestParseOCSPStapling(t *testing.T) {
	dir := t.TempDir()
	sluicetest.NewCA(t).IssueFiles(t, dir, "a.example")
	cfg, err := parseString(t, dir, `listen:
  - {address: ":8443", tls: {cert: a.example.crt, key: a.example.key}}
  - {address: ":8444", tls: {cert: a.example.crt, key: a.example.key, ocsp_stapling: false}}
  - {address: ":8445", tls: {ocsp_stapling: false, acme: {domains: [a.example], data: acme}}}
`+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	o := cfg.ListenOptions
	if a, b, c := o[Address{"tcp", ":8443"}].TLS, o[Address{"tcp", ":8444"}].TLS, o[Address{"tcp", ":8445"}].TLS; a.NoOCSPStapling || !b.NoOCSPStapling || !c.NoOCSPStapling || c.ACME == nil {
		t.Errorf("tls sections %+v, %+v, %+v", a, b, c)
	}
	var sb strings.Builder
	cfg.Explain(&sb)
	if got := sb.String(); strings.Count(got, "no OCSP stapling") != 2 {
		t.Errorf("Explain does not say twice that stapling is off:\n%s", got)
	}
	_, err = parseString(t, dir, "listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key, ocsp_stapling: no}}"+tlsRoutes)
	if err == nil || !strings.Contains(err.Error(), `test.yaml:1:87: tls.ocsp_stapling: want true or false, got "no"`) {
		t.Errorf("ocsp_stapling: no: error %v", err)
	}
}

// Mistakes in listen entries are reported at their positions.
func TestParseListenTLSErrors(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFiles(t, dir, "a.example")
	ca.IssueFiles(t, dir, "b.example")
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "plain.txt"), []byte("not PEM\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ text, want string }{
		{"listen: {address: \":1\", tls: {cert: missing.crt, key: a.example.key}}",
			"test.yaml:1:37: tls.cert: open " + filepath.Join(dir, "missing.crt") + ": no such file or directory: correct the path"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: missing.key}}",
			"test.yaml:1:57: tls.key: open " + filepath.Join(dir, "missing.key")},
		{"listen: {address: \":1\", tls: {cert: sub, key: a.example.key}}",
			"test.yaml:1:37: tls.cert: read " + filepath.Join(dir, "sub") + ": is a directory: name a file, not a directory"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: b.example.key}}",
			"test.yaml:1:57: tls.key: the key in " + filepath.Join(dir, "b.example.key") + " does not match the certificate in " + filepath.Join(dir, "a.example.crt") + ": name the key"},
		{"listen: {address: \":1\", tls: {cert: a.example.key, key: a.example.key}}",
			"test.yaml:1:37: tls.cert: " + filepath.Join(dir, "a.example.key") + " holds a private key, not a certificate: name the certificate's file"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.crt}}",
			"test.yaml:1:57: tls.key: " + filepath.Join(dir, "a.example.crt") + " holds a certificate, not a private key: name the key's file"},
		{"listen: {address: \":1\", tls: {cert: plain.txt, key: a.example.key}}",
			"test.yaml:1:37: tls.cert: " + filepath.Join(dir, "plain.txt") + " holds no PEM certificate (-----BEGIN CERTIFICATE-----): give the certificate chain in PEM (a DER file converts with openssl"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: plain.txt}}",
			"test.yaml:1:57: tls.key: " + filepath.Join(dir, "plain.txt") + " holds no PEM private key"},
		{"listen: {adress: \":1\"}", `test.yaml:1:10: unknown listen key "adress" (did you mean "address"?)`},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key, ciphers: all}}", `test.yaml:1:72: unknown tls key "ciphers"`},
		{"listen: {address: \":1\", tls: {cert: a.example.crt}}", "test.yaml:1:25: tls: want a cert and a key"},
		{"listen: {tls: {cert: a.example.crt, key: a.example.key}}", "test.yaml:1:9: listen: an entry written as a map needs an address"},
		{"listen: {address: \":1\", hsts: 1h}", "test.yaml:1:25: hsts: only a TLS listener sends"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, hsts: 365d}", "test.yaml:1:79: hsts.max_age: want how long"},
		{"listen: {address: \":1\", redirect_to_https: true}", "test.yaml:1:44: redirect_to_https: true redirects to the port of the config's TLS listener, and listen has none"},
		{"listen: {address: \":1\", redirect_to_https: 0}", "test.yaml:1:44: redirect_to_https: want true"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, redirect_to_https: 443}", "test.yaml:1:73: redirect_to_https: this listener serves TLS already"},
		{"listen: [\":1\", {address: \":1\", redirect_to_https: 443}]", "test.yaml:1:26: listen: :1 is already listed at 1:10"},
		{"listen: {address: \":1\", http2: true}", "test.yaml:1:25: http2: HTTP/2 is chosen by ALPN on a TLS listener"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, h2c: true}", "test.yaml:1:73: h2c: this listener serves TLS"},
		{"listen: {address: \":1\", h2c: yes}", "test.yaml:1:30: h2c: want true or false"},
		{"listen: {address: \":1\", redirect_to_https: 443, h2c: true}", "test.yaml:1:49: h2c: a listener that redirects to HTTPS serves no HTTP/2"},
		{"listen: {address: \":1\", h2c: true, redirect_to_https: 443}", "test.yaml:1:25: h2c: a listener that redirects to HTTPS serves no HTTP/2"},
		{"listen: {address: \":1\", http3: true}", "test.yaml:1:25: http3: HTTP/3 runs over QUIC, which is always encrypted: add tls"},
		{"listen: {address: \":1\", http3: false}", ""},
		{"listen: {address: \"unix:/run/s.sock\", tls: {cert: a.example.crt, key: a.example.key}, http3: true}", "test.yaml:1:87: http3: HTTP/3 runs over UDP, which a Unix socket does not carry"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, http3: yes}", "test.yaml:1:80: http3: want true or false"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, http3: {early_data: 1}}", "test.yaml:1:93: http3.early_data: want true or false"},
		{"listen: {address: \":1\", tls: {cert: a.example.crt, key: a.example.key}, http3: {zero_rtt: true}}", `test.yaml:1:81: unknown http3 key "zero_rtt"`},
	} {
		_, err := parseString(t, dir, tc.text+tlsRoutes)
		if tc.want == "" {
			if err != nil {
				t.Errorf("%s: %v", tc.text, err)
			}
			continue
		}
		var errs Errors
		if !errors.As(err, &errs) || len(errs) != 1 || !strings.HasPrefix(errs[0].Error(), filepath.Join(dir, tc.want)) {
			t.Errorf("%s:\ngot  %v\nwant %s", tc.text, err, filepath.Join(dir, tc.want))
		}
	}
}

// A certificate that has expired is a warning, not an error: the server
// starts, and clients are told by their own checks.
func TestParseListenTLSExpired(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	ca.IssueFilesValid(t, dir, time.Now().Add(-48*time.Hour), time.Now().Add(-24*time.Hour), "old.example")
	cfg, err := parseString(t, dir, "listen:\n  - address: :1\n    tls: {cert: old.example.crt, key: old.example.key}"+tlsRoutes)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].String(), filepath.Join(dir, "test.yaml:3:17: warning: tls.cert: the certificate in ")) ||
		!strings.Contains(cfg.Warnings[0].Msg, "expired at") {
		t.Errorf("warnings: %v", cfg.Warnings)
	}
}

// FuzzListenHTTP3: the http3 option's parser never panics, and a config
// it accepts serves HTTP/3 only beside TLS on a host:port, with early
// data only when http3 is on.
func FuzzListenHTTP3(f *testing.F) {
	for _, s := range []string{"true", "false", "{early_data: true}", "{early_data: false}", "{}", "yes", "[true]", "{early_data: 1}", "{x: 1}", "~", "'true'"} {
		f.Add(s, true)
		f.Add(s, false)
	}
	dir := f.TempDir()
	sluicetest.NewCA(f).IssueFiles(f, dir, "a.example")
	f.Fuzz(func(t *testing.T, s string, withTLS bool) {
		entry := "{address: \":8443\", http3: " + s + "}"
		if withTLS {
			entry = "{address: \":8443\", tls: {cert: a.example.crt, key: a.example.key}, http3: " + s + "}"
		}
		cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte("listen:\n  - "+entry+"\n"+tlsRoutes))
		if err != nil {
			return
		}
		defer cfg.Close()
		for a, o := range cfg.ListenOptions {
			if o.HTTP3 != nil && (o.TLS == nil || a.Network != "tcp") {
				t.Fatalf("http3: %s accepted on %v without TLS (%+v)", s, a, o)
			}
		}
	})
}
