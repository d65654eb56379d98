package certs

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/ocsp"
)

// OCSP stapling. A certificate whose leaf names an OCSP responder
// (OCSPServer) and that comes with its issuer (the second certificate
// of its chain) is served with a response from that responder stapled
// to the handshake (tls.Certificate.OCSPStaple), so that a client need
// not ask the responder itself. The stapler fetches the response when
// it first sees the certificate, checks it against the issuer, and
// fetches it again at about half its validity; a failed fetch is
// retried with a backoff. Only a Good response that is current is
// stapled: a Revoked one is logged as an error and not stapled, an
// expired one is dropped, and without a response (a responder that
// cannot be reached) the certificate is served without a staple.
//
// Each certificate's refresher belongs to its owners: the config whose
// tls section lists the certificate (a reload releases the old config),
// or the acme manager that obtained it. It stops when its last owner
// releases it, when its certificate expires, and at shutdown. An acme
// manager's certificate is also released when the manager serves one
// that replaces it (stapleLatest: a renewal, or a worker reading the
// renewed file): the refresher of the old one stops, and one starts for
// the new one if it names a responder.

// ocspStapler staples OCSP responses to certificates. Safe for
// concurrent use.
type ocspStapler struct {
	log    *slog.Logger
	client *http.Client
	now    func() time.Time

	// minWait is the shortest wait between two fetches for a
	// certificate; retry the first wait after a failed one, doubled
	// after each failure up to maxRetry.
	minWait, retry, maxRetry time.Duration

	ctx  context.Context // done once closed
	stop context.CancelFunc
	wg   sync.WaitGroup // the refreshers

	mu    sync.RWMutex
	certs map[string]*ocspCert // by the leaf's DER

	// latest are, by owner then leaf's DER, the certificates
	// stapleLatest was last given, one per slot.
	latest map[any]map[string]latestCert
}

// ocspCert is one certificate the stapler keeps a response for.
type ocspCert struct {
	cert    *tls.Certificate
	leaf    *x509.Certificate
	issuer  *x509.Certificate
	owners  map[any]bool // guarded by the stapler's mu
	stop    context.CancelFunc
	done    chan struct{}           // closed once the refresher has returned
	stapled atomic.Pointer[stapled] // nil until a Good response is at hand
}

// stapled is cert with a response stapled, and when the response
// expires.
type stapled struct {
	cert       *tls.Certificate
	nextUpdate time.Time // zero: none given
}

func newOCSPStapler(log *slog.Logger) *ocspStapler {
	ctx, stop := context.WithCancel(context.Background())
	return &ocspStapler{
		log:      log,
		client:   &http.Client{Timeout: 10 * time.Second},
		now:      time.Now,
		minWait:  time.Minute,
		retry:    time.Minute,
		maxRetry: time.Hour,
		ctx:      ctx,
		stop:     stop,
		certs:    map[string]*ocspCert{},
		latest:   map[any]map[string]latestCert{},
	}
}

// staple returns c with the OCSP response of the moment stapled, or c
// itself if there is none. The first time it sees a certificate that
// names a responder and has its issuer, it starts fetching its response
// for owner; a certificate already kept is given owner as another.
func (o *ocspStapler) staple(c *tls.Certificate, owner any) *tls.Certificate {
	return o.stapleFor(c, owner, false)
}

// stapleLatest is staple for a certificate that replaces the one owner
// had for the same names and key type, if another: a renewed one. The
// certificate replaced is released for owner (its refresher stops unless
// another owner keeps it).
func (o *ocspStapler) stapleLatest(c *tls.Certificate, owner any) *tls.Certificate {
	return o.stapleFor(c, owner, true)
}

func (o *ocspStapler) stapleFor(c *tls.Certificate, owner any, replaces bool) *tls.Certificate {
	if c == nil || len(c.Certificate) == 0 {
		return c
	}
	der := c.Certificate[0]
	o.mu.RLock()
	e := o.certs[string(der)]
	known := e != nil && e.owners[owner]
	_, current := o.latest[owner][string(der)]
	o.mu.RUnlock()
	if replaces && !current && !o.replace(c, owner) && !known {
		return c // replaced already: not to be kept again
	}
	if !known {
		if e = o.keep(c, owner, replaces); e == nil {
			return c
		}
	}
	if s := e.stapled.Load(); s != nil && (s.nextUpdate.IsZero() || o.now().Before(s.nextUpdate)) {
		return s.cert
	}
	return c
}

// replace makes c the latest certificate of owner for its slot,
// releasing for owner the one it replaces, and reports whether it is:
// not if owner's latest for the slot is newer (issued later), as a
// handshake that began before the renewal has it.
func (o *ocspStapler) replace(c *tls.Certificate, owner any) bool {
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return false
		}
	}
	key, slot := string(c.Certificate[0]), certSlot(leaf)
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		return false
	}
	latest := o.latest[owner]
	if latest == nil {
		latest = map[string]latestCert{}
		o.latest[owner] = latest
	}
	for old, l := range latest {
		if l.slot != slot || old == key {
			continue
		}
		if l.notBefore.After(leaf.NotBefore) {
			return false
		}
		delete(latest, old)
		o.releaseCert(old, owner)
	}
	latest[key] = latestCert{slot, leaf.NotBefore}
	return true
}

// latestCert is a certificate stapleLatest was given: its slot
// (certSlot) and when it was issued.
type latestCert struct {
	slot      string
	notBefore time.Time
}

// certSlot is what a certificate that replaces leaf has in common with
// it: its names and its key's type.
func certSlot(leaf *x509.Certificate) string {
	names := slices.Clone(leaf.DNSNames)
	for _, ip := range leaf.IPAddresses {
		names = append(names, ip.String())
	}
	if len(names) == 0 {
		names = append(names, leaf.Subject.CommonName)
	}
	slices.Sort(names)
	return leaf.PublicKeyAlgorithm.String() + " " + strings.Join(names, ",")
}

// keep registers c for owner, starting its refresher if it is new, and
// returns its entry; nil if c has no responder or issuer to staple
// with, or the stapler is closed, or (latest) another has replaced it
// since.
func (o *ocspStapler) keep(c *tls.Certificate, owner any, latest bool) *ocspCert {
	leaf := c.Leaf
	if leaf == nil {
		var err error
		if leaf, err = x509.ParseCertificate(c.Certificate[0]); err != nil {
			return nil
		}
	}
	if len(leaf.OCSPServer) == 0 || len(c.Certificate) < 2 {
		return nil // nothing to ask, or no issuer to check the answer with
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.ctx.Err() != nil {
		return nil
	}
	key := string(c.Certificate[0])
	if _, ok := o.latest[owner][key]; latest && !ok {
		return nil
	}
	if e := o.certs[key]; e != nil {
		e.owners[owner] = true
		return e
	}
	issuer, err := x509.ParseCertificate(c.Certificate[1])
	if err != nil {
		return nil
	}
	ctx, stop := context.WithCancel(o.ctx)
	e := &ocspCert{cert: c, leaf: leaf, issuer: issuer, owners: map[any]bool{owner: true}, stop: stop, done: make(chan struct{})}
	o.certs[key] = e
	o.wg.Add(1)
	go func() {
		defer o.wg.Done()
		defer close(e.done)
		o.refresh(ctx, e)
	}()
	return e
}

// release drops owner from every certificate, stopping the refreshers
// of those that have no owner left.
func (o *ocspStapler) release(owner any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.latest, owner)
	for key := range o.certs {
		o.releaseCert(key, owner)
	}
}

// releaseCert drops owner from the certificate whose leaf's DER is key,
// stopping its refresher if it has no owner left. o.mu is held.
func (o *ocspStapler) releaseCert(key string, owner any) {
	e := o.certs[key]
	if e == nil || !e.owners[owner] {
		return
	}
	delete(e.owners, owner)
	if len(e.owners) == 0 {
		e.stop()
		delete(o.certs, key)
	}
}

// close stops every refresher, and waits for them (a fetch under way is
// cancelled).
func (o *ocspStapler) close() {
	o.mu.Lock()
	o.stop()
	o.certs = map[string]*ocspCert{}
	o.latest = map[any]map[string]latestCert{}
	o.mu.Unlock()
	o.wg.Wait()
}

// forget removes e once its refresher stops of its own accord.
func (o *ocspStapler) forget(e *ocspCert) {
	o.mu.Lock()
	defer o.mu.Unlock()
	key := string(e.cert.Certificate[0])
	if o.certs[key] == e {
		delete(o.certs, key)
	}
}

// refresh keeps e's staple current until ctx is done or the
// certificate expires.
func (o *ocspStapler) refresh(ctx context.Context, e *ocspCert) {
	defer e.stop()
	name := e.leaf.Subject.CommonName
	if len(e.leaf.DNSNames) > 0 {
		name = e.leaf.DNSNames[0]
	}
	retry := o.retry
	for {
		if !o.now().Before(e.leaf.NotAfter) {
			e.stapled.Store(nil)
			o.forget(e)
			return
		}
		wait, err := o.fetch(ctx, e)
		switch {
		case ctx.Err() != nil:
			return
		case errors.Is(err, errRevoked):
			o.log.Error("OCSP: the certificate is REVOKED: its clients will refuse it; not stapled", "certificate", name, "serial", e.leaf.SerialNumber.String(), "error", err)
			wait, retry = retry, min(2*retry, o.maxRetry)
		case err != nil:
			if s := e.stapled.Load(); s != nil && !s.nextUpdate.IsZero() && !o.now().Before(s.nextUpdate) {
				e.stapled.Store(nil) // expired: never stapled
			}
			o.log.Warn("OCSP: cannot fetch a response to staple; trying again", "certificate", name, "error", err, "in", retry.String())
			wait, retry = retry, min(2*retry, o.maxRetry)
		default:
			retry = o.retry
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

var errRevoked = errors.New("revoked")

// fetch asks e's responders for its status and staples a Good answer.
// It returns how long to wait before asking again: about half the
// response's validity.
func (o *ocspStapler) fetch(ctx context.Context, e *ocspCert) (time.Duration, error) {
	req, err := ocsp.CreateRequest(e.leaf, e.issuer, nil)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, url := range e.leaf.OCSPServer {
		raw, err := o.post(ctx, url, req)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		resp, err := ocsp.ParseResponseForCert(raw, e.leaf, e.issuer) // checks the signature against the issuer
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", url, err))
			continue
		}
		now := o.now()
		switch {
		case resp.Status == ocsp.Revoked:
			e.stapled.Store(nil)
			return 0, fmt.Errorf("%s: %w at %s", url, errRevoked, resp.RevokedAt.UTC().Format(time.RFC3339))
		case resp.Status != ocsp.Good:
			errs = append(errs, fmt.Errorf("%s: status %s", url, ocspStatus(resp.Status)))
			continue
		case now.Add(5 * time.Minute).Before(resp.ThisUpdate):
			errs = append(errs, fmt.Errorf("%s: a response from the future (thisUpdate %s)", url, resp.ThisUpdate.UTC().Format(time.RFC3339)))
			continue
		case !resp.NextUpdate.IsZero() && !now.Before(resp.NextUpdate):
			errs = append(errs, fmt.Errorf("%s: an expired response (nextUpdate %s)", url, resp.NextUpdate.UTC().Format(time.RFC3339)))
			continue
		}
		c := *e.cert
		c.OCSPStaple = raw
		e.stapled.Store(&stapled{cert: &c, nextUpdate: resp.NextUpdate})
		wait := 12 * time.Hour // a response with no nextUpdate: newer ones always available
		if !resp.NextUpdate.IsZero() {
			wait = resp.ThisUpdate.Add(resp.NextUpdate.Sub(resp.ThisUpdate) / 2).Sub(now)
		}
		return max(wait, o.minWait), nil
	}
	return 0, errors.Join(errs...)
}

// post sends the OCSP request req to url (RFC 6960 §A.1) and returns
// the response's body.
func (o *ocspStapler) post(ctx context.Context, url string, req []byte) ([]byte, error) {
	hr, err := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(req))
	if err != nil {
		return nil, err
	}
	hr.Header.Set("Content-Type", "application/ocsp-request")
	hr.Header.Set("Accept", "application/ocsp-response")
	resp, err := o.client.Do(hr)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: status %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, 64<<10))
}

func ocspStatus(s int) string {
	switch s {
	case ocsp.Good:
		return "good"
	case ocsp.Revoked:
		return "revoked"
	case ocsp.Unknown:
		return "unknown"
	}
	return fmt.Sprint(s)
}
