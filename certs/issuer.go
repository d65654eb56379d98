package certs

import (
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/sluice-server/sluice/config"
)

// ACME certificates shared by several processes. With workers, one
// process (the supervisor's master, with an Issuer) talks to the
// authority: it obtains and renews the certificates into each acme
// section's data directory, which autocert uses as its Cache. The
// workers (NewManager's cacheOnly) read the certificates from there
// (cachedCerts), and answer the authority's challenges from there too:
// autocert's Manager writes each HTTP-01 token ("TOKEN+http-01") and
// TLS-ALPN-01 certificate ("DOMAIN+token") to its Cache before it accepts
// the challenge, and its HTTPHandler and GetCertificate read them back
// from the Cache when they are not in the process's memory. So whichever
// worker the validator's connection reaches answers it.

// An Issuer obtains and renews the certificates of acme sections into
// their data directories, for processes that serve them from there
// (NewManager's cacheOnly), as a Manager without cacheOnly does for
// itself: each domain's certificate is asked for in the background until
// obtained (logged as "certificate ready"), then renewed by autocert a
// third of its lifetime before it expires.
//
// Its methods are safe for concurrent use. The zero value is ready to
// use; set Logger first.
type Issuer struct {
	// Logger receives what the issuer logs; nil means slog.Default().
	Logger *slog.Logger

	mu       sync.Mutex
	managers map[string]*acmeManager // by config.ACME.Key
	closed   bool
}

// Issue starts obtaining the certificates of the sections not being
// obtained already. If owner is not nil (a process running as root that
// serves a config with a user), the data directories, the files already
// in them and those written into them are given to owner, so that
// processes running as its user can read them.
func (i *Issuer) Issue(sections []*config.ACME, owner *Owner) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.closed {
		return nil
	}
	if i.managers == nil {
		i.managers = map[string]*acmeManager{}
	}
	log := i.Logger
	if log == nil {
		log = slog.Default()
	}
	for _, a := range sections {
		if i.managers[a.Key()] != nil {
			continue
		}
		var cache autocert.Cache
		if owner != nil {
			if err := owner.GiveData(a); err != nil {
				return err
			}
			cache = chownCache{autocert.DirCache(a.Data), owner.UID, owner.GID}
		}
		am := newACMEManager(a, cache)
		am.obtainAll(a, log)
		i.managers[a.Key()] = am
	}
	return nil
}

// Retain stops asking for the certificates of the sections Issue was
// given that are not among keep.
func (i *Issuer) Retain(keep []*config.ACME) {
	i.mu.Lock()
	defer i.mu.Unlock()
	for k, am := range i.managers {
		if !slices.ContainsFunc(keep, func(a *config.ACME) bool { return a.Key() == k }) {
			am.stop()
			delete(i.managers, k)
		}
	}
}

// Close stops asking for certificates; Issue does nothing afterwards.
func (i *Issuer) Close() {
	i.Retain(nil)
	i.mu.Lock()
	i.closed = true
	i.mu.Unlock()
}

// cachedCerts are the certificates of an acme section as another
// process keeps them in its data directory: each domain's file (written
// by autocert.DirCache: the private key, then the chain, in PEM) is read
// at its domain's first handshake and read again when it changes. Safe
// for concurrent use.
type cachedCerts struct {
	dir     string
	domains []string
	now     func() time.Time

	mu    sync.Mutex
	certs map[string]*cachedCert // by domain
}

type cachedCert struct {
	cert    *tls.Certificate
	mod     time.Time // the file's when read
	checked time.Time // when the file was last looked at
}

// recheck is how long a certificate read is served before its file is
// looked at again.
const recheck = time.Second

func newCachedCerts(a *config.ACME) *cachedCerts {
	return &cachedCerts{dir: a.Data, domains: a.Domains, now: time.Now, certs: map[string]*cachedCert{}}
}

var errNotYet = errors.New("its certificate is not obtained yet")

// get returns the certificate of the domain name, as its file holds it.
func (cc *cachedCerts) get(name string) (*tls.Certificate, error) {
	name = strings.ToLower(strings.TrimSuffix(name, "."))
	if !slices.Contains(cc.domains, name) {
		return nil, fmt.Errorf("acme: %q is not among tls.acme.domains", name)
	}
	now := cc.now()
	cc.mu.Lock()
	defer cc.mu.Unlock()
	c := cc.certs[name]
	if c != nil && now.Sub(c.checked) < recheck {
		return c.cert, nil
	}
	file := filepath.Join(cc.dir, name) // autocert's key for a domain's ECDSA certificate
	info, err := os.Stat(file)
	switch {
	case err != nil && c == nil:
		return nil, fmt.Errorf("acme: %s: %w", name, errNotYet)
	case err != nil, c != nil && info.ModTime().Equal(c.mod):
		c.checked = now
		return c.cert, nil
	}
	cert, err := readCachedCert(file, now)
	if err != nil {
		if c != nil { // a file being replaced, say: the one read before serves on
			c.checked = now
			return c.cert, nil
		}
		return nil, fmt.Errorf("acme: %s: %w", name, err)
	}
	cc.certs[name] = &cachedCert{cert: cert, mod: info.ModTime(), checked: now}
	return cert, nil
}

// readCachedCert reads a certificate file autocert.DirCache wrote: the
// private key, then the chain, in PEM. An expired certificate is no
// certificate.
func readCachedCert(file string, now time.Time) (*tls.Certificate, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	cert, err := tls.X509KeyPair(data, data) // each takes the blocks of its kind
	if err != nil {
		return nil, err
	}
	if !now.Before(cert.Leaf.NotAfter) {
		return nil, errNotYet // expired: the renewed one is not there yet
	}
	return &cert, nil
}
