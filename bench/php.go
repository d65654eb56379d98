package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// phpConns is the keep-alive connections wrk opens to each server of the
// php scenario; phpQuickConns, with --quick (a smoke run, which must not
// load a shared machine).
const (
	phpConns      = 50
	phpQuickConns = 10
)

// phpConnsNow is the connections of this run: phpConns, or phpQuickConns
// with --quick.
func (h *harness) phpConnsNow() int {
	if h.o.quick {
		return phpQuickConns
	}
	return phpConns
}

// phpPages are the pages of the php scenario: each measured by wrk for
// the run's duration times its factor (WordPress's front page costs
// php-fpm milliseconds, so it needs longer runs for the server's CPU
// time, counted in 10 ms clock ticks, to span many ticks).
var phpPages = []struct {
	sc, path, label string
	factor          int
}{
	{report.PHPHello, pathHelloPHP, "hello.php", 1},
	{report.PHPWordPress, pathWPFront, "WordPress front page", 4},
}

// phpPeers returns the PHP peers whose base server is selected, and the
// reasons, by name, of those selected that cannot run here.
func (h *harness) phpPeers() (ps []peers.Peer, skipped map[string]string) {
	skipped = map[string]string{}
	for _, p := range peers.PHP() {
		if !slices.Contains(h.o.servers, peers.PHPBase(p.Name)) {
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

// phpSteps is the number of progress steps of the php scenario.
func (h *harness) phpSteps() int {
	if !h.has(report.PHP) {
		return 0
	}
	ps, _ := h.phpPeers()
	return len(phpPages) * len(ps) * h.o.rounds
}

// phpBackend is what every server of the php scenario stands in front
// of: the site, the php-fpm pool and WordPress's MariaDB, all on the
// client's CPUs.
type phpBackend struct {
	root string
	fpm  *fpmPool
	db   *daemon
}

func (b *phpBackend) stop() {
	if b.fpm != nil {
		b.fpm.stop()
	}
	b.db.stop()
}

// phpScenario runs the php scenario: MariaDB, the site and php-fpm
// started once, WordPress installed through the first server, then
// every server once per round, interleaved.
func (h *harness) phpScenario() error {
	ps, skipped := h.phpPeers()
	for _, p := range peers.PHP() {
		info := report.PeerInfo{Name: p.Name, About: p.About, Base: peers.PHPBase(p.Name)}
		if why, ok := skipped[p.Name]; ok {
			info.Skipped = why
			h.note("php scenario: %s skipped: %s.", p.Name, why)
		} else if !slices.ContainsFunc(ps, func(q peers.Peer) bool { return q.Name == p.Name }) {
			continue
		} else if v, err := p.Version(h.env); err == nil {
			info.Version = v
		}
		h.rep.Peers = append(h.rep.Peers, info)
	}
	if len(ps) == 0 {
		h.note("php scenario: none of sluice, nginx and caddy is selected (--servers) and installed, so it did not run.")
		return nil
	}
	if !h.hasWrk() {
		h.note("php scenario: wrk is not installed (Debian package wrk), so it did not run.")
		return nil
	}
	b, err := h.startPHPBackend(ps)
	if b != nil {
		defer b.stop()
	}
	if err != nil {
		h.note("php scenario: %v; it did not run.", err)
		return nil
	}
	for round := 1; round <= h.o.rounds; round++ {
		for _, p := range inTurn(ps, round) {
			if h.ctx.Err() != nil {
				return h.ctx.Err()
			}
			if !b.fpm.alive() || !b.db.alive() {
				h.note("php scenario: php-fpm or MariaDB exited during the run, which stopped there.")
				return nil
			}
			h.phpRound(p, b, round)
		}
	}
	return h.ctx.Err()
}

// startPHPBackend starts MariaDB, writes the site, starts php-fpm (all
// on the client's CPUs: the server core is the web server's alone), and
// installs WordPress through the first of installers that starts, with
// phpPosts posts.
// The backend it returns, even with an error, is to be stopped.
func (h *harness) startPHPBackend(installers []peers.Peer) (*phpBackend, error) {
	fpmBin := findFPM()
	if fpmBin == "" {
		return nil, fmt.Errorf("php-fpm (Debian package php-fpm) is not installed")
	}
	dir := filepath.Join(h.tmp, "php")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	h.prog.logf("php scenario: starting MariaDB")
	db, dbSock, err := startMariaDB(filepath.Join(dir, "mariadb"), h.o.clientCPU)
	if err != nil {
		return nil, err
	}
	b := &phpBackend{db: db, root: filepath.Join(dir, "site")}
	if err := makePHPSite(b.root, dbSock); err != nil {
		return b, err
	}
	if b.fpm, err = startFPM(fpmBin, dir, h.o.clientCPU, phpChildren); err != nil {
		return b, err
	}
	h.rep.PHPChildren = phpChildren
	for _, pg := range phpPages {
		if pg.sc == report.PHPWordPress {
			h.rep.PHPWordPressRun = h.o.duration * time.Duration(pg.factor)
		}
	}
	fpmVersion, _ := peers.FirstLine(fpmBin, "-v")
	dbVersion, _ := peers.FirstLine(db.prog, "--version")
	h.rep.Peers = append(h.rep.Peers,
		report.PeerInfo{Name: "php-fpm", Version: fpmVersion,
			About:   fmt.Sprintf("Debian php-fpm, one pool, `pm = static` with %d children, on a Unix socket, OPcache on; started once, on the client's CPU, behind every server", phpChildren),
			Command: strings.ReplaceAll("taskset -c "+h.o.clientCPU+" "+strings.Join(b.fpm.Argv, " "), dir, "$PHP"),
			Config:  strings.ReplaceAll(b.fpm.Conf, dir, "$PHP")},
		report.PeerInfo{Name: "mariadb", Version: dbVersion,
			About: "Debian MariaDB, WordPress's database: a private server on a Unix socket, no network, no durability (as the repository's SQL tests start it); started once, on the client's CPU"})
	h.rep.Machine = append(h.rep.Machine, fmt.Sprintf("php scenario: php-fpm (%d static children) and MariaDB on CPU %s with the client (taskset); WordPress %s from %s", phpChildren, h.o.clientCPU, wordPressVersion(), wordPressDir))

	// Through the first server that starts: the others' failure to
	// start is noted in their rounds.
	var srv *peers.Server
	var errs []string
	for _, p := range installers {
		if srv, err = h.startPHP(p, "install", b); err == nil {
			h.prog.logf("php scenario: installing WordPress through %s", p.Name)
			break
		}
		errs = append(errs, err.Error())
	}
	if srv == nil {
		return b, fmt.Errorf("no server started to install WordPress through: %s", strings.Join(errs, "; "))
	}
	defer h.stop()
	if err := installWordPress(h.ctx, srv.Env.Addr()); err != nil {
		return b, err
	}
	if err := publishPosts(h.ctx, srv.Env.Addr(), b.root, phpPosts); err != nil {
		return b, err
	}
	if _, body, err := getPage(h.ctx, srv.Env.Addr(), pathOpcache); err == nil {
		h.rep.PHPOpcache = body
		if body != "on" {
			h.note("php scenario: the pool reports OPcache %q, not on; the figures are not those of a production pool.", body)
		}
	}
	return b, nil
}

// wordPressVersion reads $wp_version from Debian's WordPress.
func wordPressVersion() string {
	data, err := os.ReadFile(filepath.Join(wordPressDir, "wp-includes", "version.php"))
	if err != nil {
		return "?"
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "$wp_version = '"); ok {
			v, _, _ := strings.Cut(rest, "'")
			return v
		}
	}
	return "?"
}

// startPHP starts PHP peer p on the server CPU in front of b's pool,
// keeping at most phpChildren idle connections to it (one per child).
func (h *harness) startPHP(p peers.Peer, label string, b *phpBackend) (*peers.Server, error) {
	saved := h.env
	h.env.Root, h.env.FPM, h.env.IdleConns = b.root, b.fpm.Sock, phpChildren
	defer func() { h.env = saved }()
	return h.start(p, label)
}

// checkPHPPages wants hello.php's exact body and WordPress's front page
// (200, with the last post the harness published) from the server at
// addr.
func checkPHPPages(ctx context.Context, addr string) error {
	code, body, err := getPage(ctx, addr, pathHelloPHP)
	if err != nil {
		return fmt.Errorf("GET %s: %w", pathHelloPHP, err)
	}
	if code != 200 || body != helloBody {
		return fmt.Errorf("GET %s answered %d with %q, not 200 with %q", pathHelloPHP, code, body, helloBody)
	}
	code, body, err = getPage(ctx, addr, pathWPFront)
	if err != nil {
		return fmt.Errorf("GET %s: %w", pathWPFront, err)
	}
	want := fmt.Sprintf("Benchmark post %d", phpPosts)
	if code != 200 || !strings.Contains(body, want) {
		return fmt.Errorf("GET %s (WordPress's front page) answered %d with %d bytes without %q", pathWPFront, code, len(body), want)
	}
	return nil
}

// phpRound starts p afresh in front of b's pool, checks both pages,
// warms it up, and measures each page with wrk at phpConns keep-alive
// connections, with the pool's CPU per request beside the server's.
func (h *harness) phpRound(p peers.Peer, b *phpBackend, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, p.Name)
	srv, err := h.startPHP(p, "php-"+fmt.Sprint(round), b)
	if err != nil {
		h.note("%s: %v", tag, err)
		return
	}
	defer h.stop()
	if err := checkPHPPages(h.ctx, srv.Env.Addr()); err != nil {
		h.note("%s: %v; not measured", tag, err)
		return
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	for _, pg := range phpPages {
		load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Paths: []string{pg.path}, Conns: h.phpConnsNow(), Duration: warm, Timeout: 10 * time.Second})
	}
	for _, pg := range phpPages {
		if !srv.Alive() {
			h.note("%s: the server exited", tag)
			return
		}
		h.step(tag, fmt.Sprintf("%s wrk c=%d", pg.label, h.phpConnsNow()))
		// CPU time from schedstat, in nanoseconds: WordPress's runs
		// cost the server a few hundred milliseconds in all, a few dozen
		// of /proc/PID/stat's 10 ms ticks.
		s0, errS0 := peers.TreeRuntime(srv.Pid)
		f0, errF0 := peers.TreeRuntime(b.fpm.pid())
		s, _, ok := h.phpWrk(srv, pg.sc, round, pg.path, h.o.duration*time.Duration(pg.factor))
		s1, errS1 := peers.TreeRuntime(srv.Pid)
		f1, errF1 := peers.TreeRuntime(b.fpm.pid())
		if !ok {
			continue
		}
		if s.OK > 0 && errS0 == nil && errS1 == nil {
			s.CPUus = float64(s1-s0) / 1e3 / float64(s.OK)
		}
		if s.OK > 0 && errF0 == nil && errF1 == nil {
			s.FPMCPUus = float64(f1-f0) / 1e3 / float64(s.OK)
		}
		h.add(s)
		h.prog.logf("    php-fpm: %.1f CPU-µs/req", s.FPMCPUus)
	}
}

// phpWrk runs wrk at phpConnsNow connections against path for d.
func (h *harness) phpWrk(srv *peers.Server, sc string, round int, path string, d time.Duration) (report.Sample, clientRun, bool) {
	conns := h.phpConnsNow()
	saved := h.o.duration
	h.o.duration = d
	defer func() { h.o.duration = saved }()
	// wrk's default 2 s timeout would count a slow WordPress answer as
	// an error; 10 s lets the latency columns show it.
	return h.wrkRun(srv, sc, round, float64(conns), conns, "http://"+srv.Env.Addr()+path, "--timeout", "10s")
}
