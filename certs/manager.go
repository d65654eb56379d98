package certs

import (
	"log/slog"
	"sync"

	"github.com/sluice-server/sluice/config"
)

// A Manager keeps the certificates of one server's TLS endpoints across
// reloads: an ACME client per distinct acme section (config.ACME.Key),
// made when a config first names it, so that a reload neither repeats
// an issuance nor loses a renewal timer; and the OCSP stapler, which
// keeps each certificate's response current for as long as a config or
// an acme section uses it.
//
// A server makes one Manager (NewManager), asks it for each TLS
// endpoint's Set and each plain endpoint's Challenges when a config is
// loaded, calls Start once it serves (as the config's user), Retain
// after each reload, and Close at shutdown.
//
// A Manager's methods are safe for concurrent use, and so are the Sets
// and Challenges it hands out.
type Manager struct {
	log       *slog.Logger
	cacheOnly bool
	ocsp      *ocspStapler

	mu      sync.Mutex
	started bool                    // Start was called: new acme sections are obtained at once
	acme    map[string]*acmeManager // by config.ACME.Key
}

// NewManager returns a Manager that logs to log (the issuances, the
// OCSP fetches that fail, a revoked certificate).
//
// With cacheOnly, the endpoints with tls.acme serve the certificates
// that another process (an Issuer: a supervisor's master) obtains and
// renews into the section's data directory, rather than ask the
// authority themselves. A certificate is then read from the directory at
// its first handshake and read again when its file changes (looked at
// once a second at most), so a renewal reaches the handshakes that
// follow; a handshake for a domain whose certificate is not there yet
// fails. Challenges are answered from the directory too (autocert keeps
// its HTTP-01 tokens and TLS-ALPN-01 certificates there), so any process
// sharing it can answer the authority's validation of an order another
// started.
func NewManager(log *slog.Logger, cacheOnly bool) *Manager {
	return &Manager{log: log, cacheOnly: cacheOnly, ocsp: newOCSPStapler(log), acme: map[string]*acmeManager{}}
}

// Set returns the certificates of t, a tls section of cfg: those it
// lists, or its acme section's. Their OCSP responses (unless
// ocsp_stapling is false) are fetched now, not at the first handshake,
// and kept for cfg (or the acme section) until Retain releases it. An
// acme section's certificates are asked for in the background at once
// if the Manager is started, else by Start.
func (m *Manager) Set(t *config.TLS, cfg *config.Config) *Set {
	s := &Set{}
	if t.ACME != nil {
		s.acme = m.acmeManager(t.ACME)
	}
	for i := range t.Certificates {
		s.certs = append(s.certs, &t.Certificates[i].Pair)
	}
	if !t.NoOCSPStapling {
		s.ocsp, s.owner = m.ocsp, cfg
		if s.acme != nil {
			s.owner = s.acme
		}
		for _, c := range s.certs {
			m.ocsp.staple(c, cfg) // fetched now, not at the first handshake
		}
	}
	return s
}

// Challenges returns the HTTP-01 answers of cfg's acme sections, which
// every plain endpoint serves, making their ACME clients if need be;
// nil if cfg has none.
func (m *Manager) Challenges(cfg *config.Config) *Challenges {
	var c *Challenges
	for _, a := range cfg.Listen {
		if o := cfg.ListenOptions[a]; o != nil && o.TLS != nil && o.TLS.ACME != nil {
			if c == nil {
				c = &Challenges{}
			}
			c.hs = append(c.hs, m.acmeManager(o.TLS.ACME).http)
		}
	}
	return c
}

// acmeManager returns the ACME client of a, made the first time. Its
// certificates are asked for in the background, at once if the Manager
// is started (a reload's new section), else from Start.
func (m *Manager) acmeManager(a *config.ACME) *acmeManager {
	m.mu.Lock()
	defer m.mu.Unlock()
	if am := m.acme[a.Key()]; am != nil {
		return am
	}
	am := newACMEManager(a, nil)
	if m.cacheOnly {
		am.files = newCachedCerts(a)
	} else if m.started {
		am.obtainAll(a, m.log)
	}
	m.acme[a.Key()] = am
	return am
}

// Start asks for the certificates of cfg's acme sections, whose ACME
// clients Set and Challenges made, and for those of the sections later
// Sets bring at once. A server calls it once it serves as the config's
// user, so that what autocert writes into the data directories (the
// account key, the certificates, and their renewals later) is the
// user's and stays readable to it. With cacheOnly it only marks the
// Manager started.
func (m *Manager) Start(cfg *config.Config) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.started = true
	if m.cacheOnly {
		return
	}
	for _, a := range cfg.ACMESections() {
		m.acme[a.Key()].obtainAll(a, m.log)
	}
}

// Retain keeps what cfg, the config a reload brings, uses: the ACME
// clients of acme sections cfg no longer has stop asking for
// certificates and are forgotten, and the OCSP responses kept for old,
// the config replaced, are released (their refreshers stop unless cfg
// or an acme section keeps the certificate).
func (m *Manager) Retain(cfg, old *config.Config) {
	keep := map[string]bool{}
	for _, o := range cfg.ListenOptions {
		if o != nil && o.TLS != nil && o.TLS.ACME != nil {
			keep[o.TLS.ACME.Key()] = true
		}
	}
	m.mu.Lock()
	for k, am := range m.acme {
		if !keep[k] {
			am.stop()
			m.ocsp.release(am)
			delete(m.acme, k)
		}
	}
	m.mu.Unlock()
	m.ocsp.release(old) // its certificates' staples, unless cfg or acme keeps them
}

// Close stops the background issuance and every OCSP refresher, and
// waits for the refreshers (a fetch under way is cancelled). The Sets
// handed out serve on without stapling anew.
func (m *Manager) Close() {
	m.mu.Lock()
	for _, am := range m.acme {
		am.stop()
	}
	m.mu.Unlock()
	m.ocsp.close()
}
