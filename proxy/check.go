package proxy

import "time"

// check sends one active health check to u and reports whether it
// passed: "GET Health.Path" on a connection of its own (over TLS for
// transport https, over HTTP/2 for h2c and h2), its response head read
// by the proxy's own parser, as strictly as any.
func (p *Proxy) check(u *host) bool {
	if p.h2 != nil {
		return p.h2.check(u)
	}
	nc, err := p.health.DialCheck(u.Network, u.Addr)
	if err != nil {
		return false
	}
	if cfg := p.hostTLS(u); cfg != nil {
		// The handshake too is bounded by the check's timeout (the
		// deadline DialCheck set on nc).
		tc, err := handshake(nc, cfg, time.Now().Add(p.health.Timeout))
		if err != nil {
			return false
		}
		nc = tc
	}
	defer nc.Close()
	req := "GET " + p.health.Path + " HTTP/1.1\r\nHost: " + u.Authority + "\r\nUser-Agent: sluice-health-check\r\nConnection: close\r\n\r\n"
	if _, err := nc.Write([]byte(req)); err != nil {
		return false
	}
	uc := &upConn{nc: nc, buf: make([]byte, 4<<10)}
	var h responseHead
	for {
		if err := uc.readHead(&h, p.maxHead, p.maxFields); err != nil {
			return false
		}
		if h.status >= 200 {
			break
		}
	}
	return p.health.Passes(h.status)
}

// reportCheck logs a change of u's health the active checks found: -1
// down, +1 up again.
func (p *Proxy) reportCheck(u *host, change int) {
	switch change {
	case -1:
		p.log.Warn("proxy: upstream down: health check failed", "upstream", u.Name, "checks", p.health.Fall)
	case +1:
		p.log.Info("proxy: upstream up again: health check passed", "upstream", u.Name, "checks", p.health.Rise)
	}
}
