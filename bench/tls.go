package bench

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
	"github.com/sluice-server/sluice/bench/tlscert"
)

// The tls scenario's loads.
const (
	h2Streams      = 10 // h2load -m: concurrent streams per HTTP/2 connection
	handshakeConns = 50 // connections the handshake runs keep opening at once
)

// tlsPeers returns the TLS peers whose base server is selected, and the
// reasons, by name, of those selected that cannot run here.
func (h *harness) tlsPeers() (ps []peers.Peer, skipped map[string]string) {
	skipped = map[string]string{}
	for _, p := range peers.TLS() {
		if !slices.Contains(h.o.servers, peers.TLSBase(p.Name)) {
			continue
		}
		if _, err := p.Version(h.env); err != nil {
			skipped[p.Name] = err.Error()
			continue
		}
		ps = append(ps, p)
	}
	return ps, skipped
}

// tlsSteps is the number of progress steps of the tls scenario.
func (h *harness) tlsSteps() int {
	if !h.has(report.TLS) {
		return 0
	}
	ps, _ := h.tlsPeers()
	return 4 * len(ps) * h.o.rounds
}

// tlsScenario runs the tls scenario: one certificate for the run, then
// every TLS peer once per round, interleaved.
func (h *harness) tlsScenario() error {
	ps, skipped := h.tlsPeers()
	for _, p := range peers.TLS() {
		info := report.PeerInfo{Name: p.Name, About: p.About, Base: peers.TLSBase(p.Name)}
		if why, ok := skipped[p.Name]; ok {
			info.Skipped = why
			h.note("tls scenario: %s skipped: %s.", p.Name, why)
		} else if !slices.ContainsFunc(ps, func(q peers.Peer) bool { return q.Name == p.Name }) {
			continue
		} else if v, err := p.Version(h.env); err == nil {
			info.Version = v
		}
		h.rep.Peers = append(h.rep.Peers, info)
	}
	if len(ps) == 0 {
		h.note("tls scenario: none of sluice, nginx, h2o and caddy is selected (--servers) and installed, so it did not run.")
		return nil
	}
	for _, tool := range []string{"wrk", "h2load"} {
		if _, err := exec.LookPath(tool); err != nil {
			h.note("tls scenario: %s is not installed (%s), so its runs are missing.", tool, map[string]string{"wrk": "Debian package wrk", "h2load": "Debian package nghttp2-client"}[tool])
		}
	}
	cert, key := filepath.Join(h.tmp, "tls-cert.pem"), filepath.Join(h.tmp, "tls-key.pem")
	if err := tlscert.Write(cert, key); err != nil {
		return err
	}
	h.rep.Machine = append(h.rep.Machine, "tls scenario: one self-signed ECDSA P-256 certificate generated for the run (bench/tlscert)")
	for round := 1; round <= h.o.rounds; round++ {
		for _, p := range inTurn(ps, round) {
			if h.ctx.Err() != nil {
				return h.ctx.Err()
			}
			h.tlsRound(p, cert, key, round)
		}
	}
	return h.ctx.Err()
}

// tlsRound starts p afresh with the run's certificate, checks that it
// answers the page over HTTPS and HTTP/2, warms it up, and measures it:
// wrk over TLS HTTP/1.1 keep-alive, h2load over HTTP/2, and
// sluicebench's client opening a connection per request with full
// handshakes (no session cache) and with resumed ones.
func (h *harness) tlsRound(p peers.Peer, cert, key string, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, p.Name)
	saved := h.env
	h.env.Cert, h.env.Key = cert, key
	srv, err := h.start(p, "tls-"+fmt.Sprint(round))
	h.env = saved
	if err != nil {
		h.note("%s: %v", tag, err)
		return
	}
	defer h.stop()
	for _, proto := range []string{"http/1.1", "h2"} {
		if err := checkTLSGet(srv.Env.Addr(), proto, h.page()); err != nil {
			h.note("%s: %v; not measured", tag, err)
			return
		}
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	url := "https://" + srv.Env.Addr() + pathIndex
	secs := strconv.Itoa(max(int(h.o.duration.Seconds()), 1))
	if _, err := exec.LookPath("h2load"); err == nil {
		h.client(warm+30*time.Second, "h2load", "-c"+strconv.Itoa(kaConns), "-m"+strconv.Itoa(h2Streams), "-t1",
			"-D", strconv.Itoa(max(int(warm.Seconds()), 1)), url)
	}

	h.step(tag, "TLS HTTP/1.1 wrk c=100")
	if srv.Alive() {
		if s, _, ok := h.wrkURLSample(srv, report.TLSH1, round, kaConns, url); ok {
			h.add(s)
		}
	}
	h.step(tag, "HTTP/2 h2load c=100 m=10")
	if srv.Alive() {
		h.h2load(srv, report.TLSH2, round, kaConns, "-c"+strconv.Itoa(kaConns), "-m"+strconv.Itoa(h2Streams), "-t1", "-D", secs, url)
	}
	h.step(tag, "full handshakes")
	if srv.Alive() {
		h.handshakes(srv, report.TLSFull, round, false)
	}
	h.step(tag, "resumed handshakes")
	if srv.Alive() {
		h.handshakes(srv, report.TLSResumed, round, true)
	}
}

// page returns the docroot's 151-byte index.html.
func (h *harness) page() string {
	body, _ := os.ReadFile(filepath.Join(h.env.Root, "index.html"))
	return string(body)
}

// wrkURLSample is wrkSample against url.
func (h *harness) wrkURLSample(srv *peers.Server, sc string, round int, x float64, url string) (report.Sample, clientRun, bool) {
	return h.wrkRun(srv, sc, round, x, kaConns, url)
}

// h2load runs h2load with args against srv and records its sample of
// scenario sc at x.
func (h *harness) h2load(srv *peers.Server, sc string, round int, x float64, args ...string) {
	if _, err := exec.LookPath("h2load"); err != nil {
		return
	}
	u0, _ := srv.Usage()
	run, err := h.clientRun(h.o.duration+time.Minute, "h2load", args...)
	u1, _ := srv.Usage()
	res, perr := parseH2load(run.out)
	if perr != nil {
		h.note("%s %s: h2load: %v: %s", srv.Peer.Name, sc, errors.Join(err, perr), lastLines(run.out, 3))
		return
	}
	s := report.Sample{Scenario: sc, Server: srv.Peer.Name, Round: round, X: x, Tool: "h2load", RSS: u1.RSS,
		RPS: res.rps, OK: res.succeeded, Errors: res.errors(), MeanMs: res.meanMs, MaxMs: res.maxMs}
	if s.OK > 0 {
		s.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(s.OK)
	}
	if s.Errors > 0 {
		s.ErrorText = res.errText
	}
	h.add(s)
}

// h2loadResult is what parseH2load reads from h2load's report.
type h2loadResult struct {
	total, done, succeeded   int64
	failed, errored, timeout int64
	status4xx, status5xx     int64
	rps                      float64
	meanMs, maxMs            float64 // "time for request"
	errText                  string  // the requests line, if any failed
}

// errors is the requests that did not succeed: failed (which counts
// the errored and timed-out ones, and those answered but not 2xx or
// 3xx), or answered 4xx or 5xx.
func (r h2loadResult) errors() int64 {
	return max(r.failed, r.errored+r.timeout, r.done-r.succeeded, r.status4xx+r.status5xx)
}

// parseH2load parses the report h2load prints; it fails if h2load
// printed none.
func parseH2load(out string) (h2loadResult, error) {
	if !regexp.MustCompile(`(?m)^requests: \d+ total`).MatchString(out) {
		return h2loadResult{}, errors.New("h2load printed no report")
	}
	n := func(re string) int64 { return int64(num(out, re)) }
	r := h2loadResult{
		total: n(`requests: (\d+) total`), done: n(`(\d+) done`), succeeded: n(`(\d+) succeeded`),
		failed: n(`(\d+) failed`), errored: n(`(\d+) errored`), timeout: n(`(\d+) timeout`),
		status4xx: n(`(\d+) 4xx`), status5xx: n(`(\d+) 5xx`),
		rps:    num(out, `finished in [^,]+, ([\d.]+) req/s`),
		meanMs: h2loadDur(out, 2), maxMs: h2loadDur(out, 1),
	}
	if r.errors() > 0 {
		r.errText = regexp.MustCompile(`requests: .*`).FindString(out)
	}
	return r, nil
}

// h2loadDur reads column col (0 min, 1 max, 2 mean) of h2load's "time
// for request" line, in ms.
func h2loadDur(out string, col int) float64 {
	m := regexp.MustCompile(`time for request:\s+(\S+)\s+(\S+)\s+(\S+)`).FindStringSubmatch(out)
	if m == nil {
		return 0
	}
	return wrkDur(" "+m[col+1], `\s(\S+)`)
}

// handshakes measures new TLS connections: handshakeConns clients at
// a time, each opening connection after connection for the run's
// duration, with one GET (Connection: close) on each. With resume, each
// client keeps the session of its last connection and offers it on the
// next (a resumed handshake, if the server agrees); without, it keeps
// none, and every handshake is a full one. The client offers X25519
// alone, the key share every peer's TLS library takes.
func (h *harness) handshakes(srv *peers.Server, sc string, round int, resume bool) {
	end := time.Now().Add(h.o.duration)
	ctx, cancel := context.WithDeadline(h.ctx, end)
	defer cancel()
	var ok, failed, resumed atomic.Int64
	var firstErr atomic.Value
	var lat load.Histogram // safe for concurrent use
	u0, _ := srv.Usage()
	start := time.Now()
	var wg sync.WaitGroup
	for range handshakeConns {
		cfg := fullHandshakeConfig()
		if resume {
			cfg.ClientSessionCache = tls.NewLRUClientSessionCache(1)
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				t0 := time.Now()
				did, err := tlsGet(ctx, srv.Env.Addr(), cfg, true)
				if !time.Now().Before(end) || ctx.Err() != nil {
					return // cut off by the run's end: not counted
				}
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				ok.Add(1)
				if did {
					resumed.Add(1)
				}
				lat.Record(time.Since(t0))
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	u1, _ := srv.Usage()
	s := report.Sample{Scenario: sc, Server: srv.Peer.Name, Round: round, X: handshakeConns, Tool: "sluicebench",
		RPS: float64(ok.Load()) / elapsed.Seconds(), OK: ok.Load(), Errors: failed.Load(), RSS: u1.RSS, Resumed: resumed.Load(),
		P50ms: ms(lat.Quantile(0.5)), P99ms: ms(lat.Quantile(0.99)), MeanMs: ms(lat.Mean()), MaxMs: ms(lat.Max())}
	if s.OK > 0 {
		s.CPUus = float64((u1.CPU - u0.CPU).Microseconds()) / float64(s.OK)
	}
	if s.Errors > 0 {
		s.ErrorText = fmt.Sprintf("%d failed; first: %v", s.Errors, firstErr.Load())
	}
	h.add(s)
	h.prog.logf("    %d of %d handshakes resumed a session", s.Resumed, s.OK)
}

// fullHandshakeConfig is the handshake runs' client configuration: no
// session cache (every handshake a full one), X25519 alone (the key
// share every peer's TLS library takes), HTTP/1.1 by ALPN; the
// certificate is not verified (the run's own, self-signed).
func fullHandshakeConfig() *tls.Config {
	return &tls.Config{InsecureSkipVerify: true, CurvePreferences: []tls.CurveID{tls.X25519}, NextProtos: []string{"http/1.1"}}
}

// tlsGet opens a TLS connection to addr with cfg, sends GET /index.html
// (with Connection: close if closing) and reads the whole answer, which
// must be 200. It reports whether the handshake resumed a session.
func tlsGet(ctx context.Context, addr string, cfg *tls.Config, closing bool) (resumed bool, err error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: 5 * time.Second}, Config: cfg}
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, err
	}
	c := nc.(*tls.Conn)
	resumed = c.ConnectionState().DidResume
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	hdr := ""
	if closing {
		hdr = "Connection: close\r\n"
	}
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n%s\r\n", pathIndex, addr, hdr); err != nil {
		return resumed, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return resumed, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return resumed, err
	}
	if resp.StatusCode != http.StatusOK {
		return resumed, fmt.Errorf("GET %s answered %s", pathIndex, resp.Status)
	}
	return resumed, nil
}

// checkTLSGet makes one GET /index.html to addr over TLS with ALPN proto
// ("http/1.1" or "h2"), and wants that protocol, 200 and body.
func checkTLSGet(addr, proto, body string) error {
	cfg := &tls.Config{InsecureSkipVerify: true}
	tr := &http.Transport{TLSClientConfig: cfg, DisableKeepAlives: true}
	if proto == "h2" {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP2(true)
	} else {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
	}
	c := &http.Client{Timeout: 5 * time.Second, Transport: tr}
	resp, err := c.Get("https://" + addr + pathIndex)
	if err != nil {
		return fmt.Errorf("GET over %s: %w", proto, err)
	}
	defer resp.Body.Close()
	got, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("GET over %s: %w", proto, err)
	}
	want := map[string]int{"http/1.1": 1, "h2": 2}[proto]
	if resp.ProtoMajor != want || resp.StatusCode != http.StatusOK || string(got) != body {
		return fmt.Errorf("GET over %s answered %s %s with %d bytes, not HTTP/%d 200 with the %d-byte page", proto, resp.Proto, resp.Status, len(got), want, len(body))
	}
	return nil
}
