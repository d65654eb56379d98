package certs

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/ocsp"

	"github.com/sluice-server/sluice/sluicetest"
)

// ocspResponder is an OCSP responder started by a test: it answers for
// the certificates of its CA with the status of the moment, each
// response's thisUpdate a second later than the previous one's, so that
// a refreshed staple differs from the one before.
type ocspResponder struct {
	*httptest.Server
	ca *sluicetest.CA

	mu       sync.Mutex
	status   int
	validity time.Duration // nextUpdate - now; negative: expired
	asked    int
}

func newOCSPResponder(t *testing.T, ca *sluicetest.CA) *ocspResponder {
	r := &ocspResponder{ca: ca, status: ocsp.Good, validity: time.Hour}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, hr *http.Request) {
		b, _ := io.ReadAll(hr.Body)
		req, err := ocsp.ParseRequest(b)
		if err != nil || hr.Header.Get("Content-Type") != "application/ocsp-request" {
			http.Error(w, "bad request", 400)
			return
		}
		r.mu.Lock()
		r.asked++
		now := time.Now().Truncate(time.Second)
		this := now.Add(-time.Hour + time.Duration(r.asked)*time.Second)
		status, next := r.status, now.Add(r.validity)
		r.mu.Unlock()
		leaf := &x509.Certificate{SerialNumber: req.SerialNumber}
		w.Header().Set("Content-Type", "application/ocsp-response")
		w.Write(ca.OCSPResponse(t, leaf, status, this, next))
	}))
	t.Cleanup(r.Close)
	ca.OCSPServer = []string{r.URL}
	ca.Chain = true
	return r
}

func (r *ocspResponder) set(status int, validity time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status, r.validity = status, validity
}

func (r *ocspResponder) timesAsked() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.asked
}

// stapleOf makes a TLS handshake with the server at addr, which must
// succeed, and returns the OCSP response stapled to it, nil if none.
func stapleOf(t *testing.T, addr string, ca *sluicetest.CA) []byte {
	t.Helper()
	return sluicetest.Handshake(t, addr, ca.ClientConfig("a.example")).OCSPResponse
}

// ocspSite is a TLS listener serving a.example's certificate, issued by
// a CA whose OCSP responder the test runs.
type ocspSite struct {
	s    *testServer
	resp *ocspResponder
	ca   *sluicetest.CA
	file string // the config file
	addr string
}

// ocspConfig is the site's config, with tls options extra (", key: value").
func ocspConfig(extra string) string {
	return "listen:\n  - address: 127.0.0.1:0\n    tls: {cert: a.example.crt, key: a.example.key" + extra + "}\nroutes:\n  - match: /\n    pipeline:\n      - text: hi\n"
}

// newOCSPSite starts the site once prepare has set up the responder.
// The stapler waits 10ms at least between fetches, and retries as soon.
func newOCSPSite(t *testing.T, prepare func(*ocspResponder)) *ocspSite {
	t.Helper()
	dir := t.TempDir()
	site := &ocspSite{ca: sluicetest.NewCA(t), file: filepath.Join(dir, "site.yaml")}
	site.resp = newOCSPResponder(t, site.ca)
	if prepare != nil {
		prepare(site.resp)
	}
	site.ca.IssueFiles(t, dir, "a.example")
	writeFile(t, site.file, ocspConfig(""))
	site.s = serveConfig(t, site.file, false, func(m *Manager) {
		m.ocsp.minWait, m.ocsp.retry, m.ocsp.maxRetry = 10*time.Millisecond, 10*time.Millisecond, 50*time.Millisecond
	})
	site.addr = site.s.eps[0].addr
	return site
}

// staple makes a TLS handshake with the site, which must succeed, and
// returns the OCSP response stapled to it, nil if none.
func (site *ocspSite) staple(t *testing.T) []byte {
	t.Helper()
	return stapleOf(t, site.addr, site.ca)
}

// A certificate that names an OCSP responder is served with the
// responder's Good answer stapled, checked against the issuer, and
// refreshed before it expires: a later handshake gets a newer one. A
// reload to ocsp_stapling: false stops the stapling and its refresher.
func TestOCSPStapling(t *testing.T) {
	site := newOCSPSite(t, nil)
	var first *ocsp.Response
	sluicetest.WaitFor(t, "a stapled OCSP response", func() bool {
		raw := site.staple(t)
		if raw == nil {
			return false
		}
		r, err := ocsp.ParseResponse(raw, site.ca.Cert)
		if err != nil {
			t.Fatalf("stapled response: %v", err)
		}
		first = r
		return true
	})
	if first.Status != ocsp.Good {
		t.Fatalf("stapled status %d, want Good", first.Status)
	}
	// Each response is valid for an hour from an hour ago: past half its
	// validity already, so the stapler asks again after its shortest
	// wait (10ms here).
	sluicetest.WaitFor(t, "the staple refreshed", func() bool {
		r, err := ocsp.ParseResponse(site.staple(t), site.ca.Cert)
		return err == nil && r.ThisUpdate.After(first.ThisUpdate)
	})

	writeFile(t, site.file, ocspConfig(", ocsp_stapling: false"))
	site.s.reload(t)
	if site.staple(t) != nil {
		t.Errorf("ocsp_stapling: false: a response is stapled")
	}
	site.s.m.ocsp.mu.RLock()
	n := len(site.s.m.ocsp.certs)
	site.s.m.ocsp.mu.RUnlock()
	if n != 0 {
		t.Errorf("after the reload the stapler keeps %d certificates, want none", n)
	}
	site.s.m.ocsp.wg.Wait() // returns once the refresher has stopped
	asked := site.resp.timesAsked()
	site.staple(t)
	if got := site.resp.timesAsked(); got != asked {
		t.Errorf("the responder was asked %d times after the refresher stopped", got-asked)
	}
}

// A Revoked answer, an Unknown one and an expired one are never
// stapled, and an unreachable responder leaves the handshake working
// without a staple.
func TestOCSPNotStapled(t *testing.T) {
	for _, tc := range []struct {
		name     string
		status   int
		validity time.Duration
		logged   string
	}{
		{"revoked", ocsp.Revoked, time.Hour, "REVOKED"},
		{"unknown", ocsp.Unknown, time.Hour, "status unknown"},
		{"expired", ocsp.Good, -time.Minute, "an expired response"},
		{"unreachable", ocsp.Good, time.Hour, "cannot fetch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newOCSPSite(t, func(r *ocspResponder) {
				r.set(tc.status, tc.validity)
				if tc.name == "unreachable" {
					r.Close()
				}
			})
			if tc.name == "unreachable" {
				sluicetest.WaitFor(t, "the failure logged", func() bool { return strings.Contains(site.s.log.String(), tc.logged) })
			} else { // asked again: the first answer was dealt with
				sluicetest.WaitFor(t, "the responder asked twice", func() bool { return site.resp.timesAsked() >= 2 })
			}
			if site.staple(t) != nil {
				t.Errorf("a response is stapled")
			}
			if !strings.Contains(site.s.log.String(), tc.logged) {
				t.Errorf("the log does not say %q", tc.logged)
			}
		})
	}
}

// A Good staple whose responder then answers Revoked is withdrawn.
func TestOCSPRevokedWithdrawsStaple(t *testing.T) {
	site := newOCSPSite(t, nil)
	sluicetest.WaitFor(t, "a stapled OCSP response", func() bool { return site.staple(t) != nil })
	site.resp.set(ocsp.Revoked, time.Hour)
	asked := site.resp.timesAsked()
	sluicetest.WaitFor(t, "the responder asked twice more", func() bool { return site.resp.timesAsked() >= asked+2 })
	if site.staple(t) != nil {
		t.Errorf("still stapled after the responder said Revoked")
	}
	if !strings.Contains(site.s.log.String(), "REVOKED") {
		t.Errorf("the log does not say REVOKED")
	}
}

// The stapler on its own, as the acme path uses it: a certificate with
// no responder (Let's Encrypt's, since it ended OCSP) costs no fetch; one
// with a responder is stapled and kept for its owner until the owner
// releases it; close stops every refresher.
func TestOCSPStapler(t *testing.T) {
	logger, _ := sluicetest.Logger()
	o := newOCSPStapler(logger)
	defer o.close()

	plain := sluicetest.NewCA(t)
	plain.Chain = true
	c := plain.Issue(t, "a.example")
	if got := o.staple(&c, "acme"); got != &c {
		t.Errorf("a certificate with no responder: got another certificate")
	}
	if len(o.certs) != 0 {
		t.Errorf("a certificate with no responder is kept")
	}

	ca := sluicetest.NewCA(t)
	newOCSPResponder(t, ca)
	c2 := ca.Issue(t, "a.example")
	sluicetest.WaitFor(t, "a staple", func() bool { return len(o.staple(&c2, "acme").OCSPStaple) > 0 })
	if c2.OCSPStaple != nil {
		t.Errorf("the certificate given was changed; want a copy stapled")
	}
	o.release("acme")
	o.mu.RLock()
	n := len(o.certs)
	o.mu.RUnlock()
	if n != 0 {
		t.Errorf("released: %d certificates kept", n)
	}
	o.close()
	if got := o.staple(&c2, "acme"); got != &c2 {
		t.Errorf("closed: still stapling")
	}
}

// An ACME certificate that names a responder is stapled too: here one a
// worker (a cache-only Manager) reads from the data directory, since pebble's
// certificates, like Let's Encrypt's now, name none.
func TestOCSPStaplingACME(t *testing.T) {
	dir := t.TempDir()
	ca := sluicetest.NewCA(t)
	newOCSPResponder(t, ca)
	writeCached(t, ca, filepath.Join(dir, "acme"), acmeDomain, acmeDomain)
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, "listen:\n  - address: 127.0.0.1:0\n    tls: {acme: {domains: ["+acmeDomain+"], directory: \"https://127.0.0.1:1/dir\", data: acme}}\nroutes:\n  - match: /\n    pipeline:\n      - text: hi\n")
	s := serveConfig(t, file, true, nil)
	sluicetest.WaitFor(t, "a stapled OCSP response", func() bool {
		r, err := ocsp.ParseResponse(sluicetest.Handshake(t, s.eps[0].addr, ca.ClientConfig(acmeDomain)).OCSPResponse, ca.Cert)
		return err == nil && r.Status == ocsp.Good
	})
}

// stopped reports whether the refresher of the certificate e has
// returned.
func stopped(e *ocspCert) bool {
	select {
	case <-e.done:
		return true
	default:
		return false
	}
}

// keptCert returns the stapler's entry for c, nil if it keeps none.
func keptCert(o *ocspStapler, c *tls.Certificate) *ocspCert {
	o.mu.RLock()
	defer o.mu.RUnlock()
	return o.certs[string(c.Certificate[0])]
}

// A certificate given to stapleLatest replaces, for its owner, the one
// it had for the same names (a renewal): the old one's refresher stops,
// the new one is stapled, an owner's certificates for other names are
// left alone, and the old one, served late by a handshake begun before
// the renewal, is not kept again. A renewal that names no responder
// stops the refresher too.
func TestOCSPStaplerRenewal(t *testing.T) {
	logger, _ := sluicetest.Logger()
	o := newOCSPStapler(logger)
	defer o.close()
	ca := sluicetest.NewCA(t)
	newOCSPResponder(t, ca)
	now := time.Now()
	old := ca.IssueValid(t, now.Add(-2*time.Hour), now.Add(24*time.Hour), "a.example")
	renewed := ca.IssueValid(t, now.Add(-time.Hour), now.Add(48*time.Hour), "a.example")
	other := ca.IssueValid(t, now.Add(-2*time.Hour), now.Add(24*time.Hour), "b.example")

	sluicetest.WaitFor(t, "a staple", func() bool { return len(o.stapleLatest(&old, "acme").OCSPStaple) > 0 })
	o.stapleLatest(&other, "acme")
	eOld, eOther := keptCert(o, &old), keptCert(o, &other)

	sluicetest.WaitFor(t, "the renewed certificate stapled", func() bool {
		return len(o.stapleLatest(&renewed, "acme").OCSPStaple) > 0
	})
	sluicetest.WaitFor(t, "the replaced certificate's refresher stopped", func() bool { return stopped(eOld) })
	if keptCert(o, &old) != nil {
		t.Errorf("the replaced certificate is still kept")
	}
	if keptCert(o, &other) != eOther || stopped(eOther) {
		t.Errorf("the certificate for another name was dropped")
	}

	if got := o.stapleLatest(&old, "acme"); got != &old {
		t.Errorf("the replaced certificate served late: got another certificate, want it unstapled")
	}
	if keptCert(o, &old) != nil {
		t.Errorf("the replaced certificate served late is kept again")
	}
	eRenewed := keptCert(o, &renewed)
	if eRenewed == nil || stopped(eRenewed) {
		t.Fatalf("the replaced certificate served late stopped its renewal's refresher")
	}

	plain := sluicetest.NewCA(t) // names no responder
	plain.Chain = true
	noResponder := plain.IssueValid(t, now, now.Add(72*time.Hour), "a.example")
	if got := o.stapleLatest(&noResponder, "acme"); got != &noResponder {
		t.Errorf("a certificate with no responder: got another certificate")
	}
	sluicetest.WaitFor(t, "the refresher of the certificate replaced by one with no responder stopped", func() bool { return stopped(eRenewed) })
	if keptCert(o, &renewed) != nil {
		t.Errorf("the certificate replaced by one with no responder is still kept")
	}
}

// A worker (a cache-only Manager) that reads a renewed certificate from the
// data directory staples it, and stops the refresher of the one before.
func TestOCSPStaplingACMERenewal(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join(dir, "acme")
	ca := sluicetest.NewCA(t)
	newOCSPResponder(t, ca)
	writeCached(t, ca, data, acmeDomain, acmeDomain)
	file := filepath.Join(dir, "site.yaml")
	writeFile(t, file, "listen:\n  - address: 127.0.0.1:0\n    tls: {acme: {domains: ["+acmeDomain+"], directory: \"https://127.0.0.1:1/dir\", data: acme}}\nroutes:\n  - match: /\n    pipeline:\n      - text: hi\n")
	s := serveConfig(t, file, true, nil)
	addr := s.eps[0].addr

	// stapled returns the serial of the certificate a handshake gets, if
	// a Good response for it is stapled, else nil.
	stapled := func() *x509.Certificate {
		st := sluicetest.Handshake(t, addr, ca.ClientConfig(acmeDomain))
		leaf := st.PeerCertificates[0]
		r, err := ocsp.ParseResponseForCert(st.OCSPResponse, leaf, ca.Cert)
		if err != nil || r.Status != ocsp.Good {
			return nil
		}
		return leaf
	}
	var first *x509.Certificate
	sluicetest.WaitFor(t, "a stapled OCSP response", func() bool { first = stapled(); return first != nil })
	eFirst := keptCert(s.m.ocsp, &tls.Certificate{Certificate: [][]byte{first.Raw}})
	if eFirst == nil {
		t.Fatal("the stapler does not keep the certificate served")
	}

	writeCached(t, ca, data, acmeDomain, acmeDomain) // renewed by another process
	sluicetest.WaitFor(t, "the renewed certificate served stapled", func() bool {
		c := stapled()
		return c != nil && c.SerialNumber.Cmp(first.SerialNumber) != 0
	})
	sluicetest.WaitFor(t, "the refresher of the certificate before stopped", func() bool { return stopped(eFirst) })
	s.m.ocsp.mu.RLock()
	n := len(s.m.ocsp.certs)
	s.m.ocsp.mu.RUnlock()
	if n != 1 {
		t.Errorf("the stapler keeps %d certificates, want the renewed one alone", n)
	}
}
