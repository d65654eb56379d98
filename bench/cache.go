package bench

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/bench/load"
	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
)

// cacheObjects are the objects of the cache scenario: the docroot's 4 KB
// page and 100 KB file, X their size.
var cacheObjects = []struct {
	path string
	size int
}{
	{pathWebpipes, 4 << 10},
	{sizePath(100 << 10), 100 << 10},
}

// cacheVariant is one server of the cache scenario.
type cacheVariant struct {
	peer    peers.Peer
	base    string // the --servers name it stands for
	caching bool   // false for sluice-proxy, measured on misses only
	serving string // the command-line text of the processes whose CPU is the server's ("": every process)
}

// cacheProxyName is the proxy measured alone on the cache scenario's
// misses: Sluice's proxy source, the peer of the proxy scenario.
const cacheProxyName = "sluice-proxy"

// cacheAll returns every possible variant of the cache scenario: the
// caches, then Sluice's proxy alone.
func cacheAll() []cacheVariant {
	var vs []cacheVariant
	for _, p := range peers.Caches() {
		v := cacheVariant{peer: p, base: peers.CacheBase(p.Name), caching: true}
		if p.Name == "nginx-cache" {
			v.serving = "worker process"
		}
		vs = append(vs, v)
	}
	for _, p := range peers.Proxies() {
		if p.Name == cacheProxyName {
			vs = append(vs, cacheVariant{peer: p, base: proxyBase(p.Name)})
		}
	}
	return vs
}

// cacheVariants returns the variants whose base server is selected, and
// the reasons, by name, of those selected that cannot run here.
func (h *harness) cacheVariants() (vs []cacheVariant, skipped map[string]string) {
	skipped = map[string]string{}
	for _, v := range cacheAll() {
		if !slices.Contains(h.o.servers, v.base) {
			continue
		}
		if _, err := v.peer.Version(h.env); err != nil {
			skipped[v.peer.Name] = err.Error()
			continue
		}
		vs = append(vs, v)
	}
	return vs, skipped
}

// cacheSteps is the number of progress steps of the cache scenario.
func (h *harness) cacheSteps() int {
	if !h.has(report.Cache) {
		return 0
	}
	vs, _ := h.cacheVariants()
	n := 0
	for _, v := range vs {
		n += len(cacheObjects)
		if v.caching {
			n += len(cacheObjects)
		}
	}
	return n * h.o.rounds
}

// cacheScenario runs the cache scenario: the origin started once on the
// client's CPU, then every server once per round, interleaved.
func (h *harness) cacheScenario() error {
	vs, skipped := h.cacheVariants()
	for _, v := range cacheAll() {
		info := report.PeerInfo{Name: v.peer.Name, About: v.peer.About, Base: v.base}
		if why, ok := skipped[v.peer.Name]; ok {
			info.Skipped = why
			h.note("cache scenario: %s skipped: %s.", v.peer.Name, why)
		} else if !slices.ContainsFunc(vs, func(w cacheVariant) bool { return w.peer.Name == v.peer.Name }) {
			continue
		} else if ver, err := v.peer.Version(h.env); err == nil {
			info.Version = ver
		}
		if !slices.ContainsFunc(h.rep.Peers, func(p report.PeerInfo) bool { return p.Name == info.Name }) {
			h.rep.Peers = append(h.rep.Peers, info)
		}
	}
	if !slices.ContainsFunc(vs, func(v cacheVariant) bool { return v.caching }) {
		h.note("cache scenario: none of sluice, nginx and varnish is selected (--servers) and installed, so it did not run.")
		return nil
	}
	if !h.hasWrk() {
		h.note("cache scenario: wrk is not installed (Debian package wrk), so it did not run.")
		return nil
	}
	origin, err := h.startOrigin()
	if err != nil {
		h.note("cache scenario: the origin: %v; it did not run.", err)
		return nil
	}
	defer origin.Stop()
	for round := 1; round <= h.o.rounds; round++ {
		for _, v := range inTurn(vs, round) {
			if h.ctx.Err() != nil {
				return h.ctx.Err()
			}
			if !origin.Alive() {
				h.note("cache scenario: the origin exited during the run, which stopped there.")
				return nil
			}
			h.cacheRound(v, origin, round)
		}
	}
	return h.ctx.Err()
}

// startOrigin starts the cache scenario's origin on the client's CPU,
// serving the docroot.
func (h *harness) startOrigin() (*peers.Server, error) {
	port, err := machine.FreePort()
	if err != nil {
		return nil, err
	}
	o := peers.CacheOrigin()
	env := h.env
	env.Port = port
	env.Dir = filepath.Join(h.tmp, "run", "origin")
	srv, err := peers.Start(o, env, h.o.clientCPU)
	if err != nil {
		return nil, err
	}
	info := report.PeerInfo{Name: o.Name, About: o.About}
	if v, err := o.Version(h.env); err == nil {
		info.Version = v
	}
	h.rep.Peers = append(h.rep.Peers, info)
	h.recordConfig(srv)
	h.rep.Machine = append(h.rep.Machine, fmt.Sprintf("origin of the cache scenario: %s on CPU %s (taskset)", o.Name, h.o.clientCPU),
		fmt.Sprintf("cache scenario: nginx-cache's proxy_cache_path and Varnish's working directory on %s (the scratch directory's file system)", fsType(h.tmp)))
	return srv, nil
}

// cacheRound starts v afresh in front of origin, checks that it answers
// each object (and, a cache, from its store the second time), warms it
// up, and measures each object with wrk at 100 keep-alive connections:
// hits, then misses.
func (h *harness) cacheRound(v cacheVariant, origin *peers.Server, round int) {
	tag := fmt.Sprintf("round %d/%d %s", round, h.o.rounds, v.peer.Name)
	saved := h.env
	h.env.Upstream, h.env.IdleConns = origin.Env.Addr(), proxyIdleConns
	srv, err := h.start(v.peer, "cache-"+fmt.Sprint(round))
	h.env = saved
	if err != nil {
		h.note("%s: %v", tag, err)
		return
	}
	defer h.stop()
	for _, obj := range cacheObjects {
		want, err := os.ReadFile(filepath.Join(h.env.Root, strings.TrimPrefix(obj.path, "/")))
		if err == nil {
			err = checkCached(srv.Env.Addr(), obj.path, want, v.peer.Name, v.caching)
		}
		if err != nil {
			h.note("%s: %v; not measured", tag, err)
			return
		}
	}
	warm := time.Second
	if h.o.quick {
		warm = 300 * time.Millisecond
	}
	for _, obj := range cacheObjects {
		load.Run(h.ctx, load.Config{Addr: srv.Env.Addr(), Paths: []string{obj.path}, Conns: kaConns, Duration: warm})
	}
	for _, obj := range cacheObjects {
		if v.caching && srv.Alive() {
			h.step(tag, fmt.Sprintf("%d KB hit wrk c=%d", obj.size>>10, kaConns))
			h.cacheMeasure(v, srv, origin, report.CacheHit, round, obj.size, obj.path, nil)
		}
	}
	for _, obj := range cacheObjects {
		if !srv.Alive() {
			h.note("%s: the server exited", tag)
			return
		}
		if v.caching {
			if err := h.fillStore(srv, origin, obj.path, obj.size, fmt.Sprintf("%s-%d-fill", v.peer.Name, round)); err != nil {
				h.note("%s: filling the store with %d KB misses: %v", tag, obj.size>>10, err)
			}
		}
		h.step(tag, fmt.Sprintf("%d KB miss wrk c=%d", obj.size>>10, kaConns))
		script := filepath.Join(h.tmp, "run", fmt.Sprintf("miss-%s-%d-%d.lua", v.peer.Name, round, obj.size))
		if err := os.WriteFile(script, []byte(missScript(obj.path, fmt.Sprintf("%s-%d", v.peer.Name, round))), 0o644); err != nil {
			h.note("%s: %v", tag, err)
			return
		}
		h.cacheMeasure(v, srv, origin, report.CacheMiss, round, obj.size, obj.path, []string{"-s", script})
	}
}

// cacheStore is every cache's store budget in the scenario's
// configurations (Sluice's size, nginx's max_size, Varnish's malloc
// storage).
const cacheStore = 256 << 20

// fillTime bounds fillStore.
const fillTime = 30 * time.Second

// fillStore sends misses of size-byte objects (path with distinct query
// strings, numbered after tag) through srv until the origin has answered
// enough of them to fill a cacheStore-byte store and a tenth more, or
// fillTime passes: misses are then measured with the store full, as a
// cache that has run a while is, rather than while a fresh process
// faults its store's memory in (the first use of each page, a cost of
// the first 256 MB a process stores, not of each miss).
func (h *harness) fillStore(srv, origin *peers.Server, path string, size int, tag string) error {
	need := int64(cacheStore/size) * 11 / 10
	start, err := originRequests(origin.Env.Addr())
	if err != nil {
		return err
	}
	deadline := time.Now().Add(fillTime)
	for k := 0; ; k++ {
		n, err := originRequests(origin.Env.Addr())
		if err != nil {
			return err
		}
		if n-start >= need {
			return nil
		}
		if time.Now().After(deadline) || !srv.Alive() {
			return fmt.Errorf("the origin answered %d of %d misses in %v", n-start, need, fillTime)
		}
		script := filepath.Join(h.tmp, "run", fmt.Sprintf("%s-%d-%d.lua", tag, size, k))
		if err := os.WriteFile(script, []byte(missScript(path, fmt.Sprintf("%s-%d", tag, k))), 0o644); err != nil {
			return err
		}
		if run, err := h.clientRun(time.Minute, "wrk", "-t1", fmt.Sprintf("-c%d", kaConns), "-d1s", "-s", script, "http://"+srv.Env.Addr()+path); err != nil {
			return fmt.Errorf("wrk: %v: %s", err, strings.TrimSpace(run.out))
		}
	}
}

// missScript is a wrk script whose every request asks for path with a
// distinct query string, numbered after tag: a new key for every cache.
func missScript(path, tag string) string {
	return fmt.Sprintf(`-- Every request a distinct query string: a new key for every cache.
local n = 0
request = function()
  n = n + 1
  return wrk.format("GET", %q .. n)
end
`, path+"?miss="+tag+"-")
}

// cacheMeasure runs wrk against path on srv (with args: a script) and
// records the sample of sc at size, with the server's CPU per request
// from schedstat (v.serving's processes, and every process), and the
// origin's requests during the run.
func (h *harness) cacheMeasure(v cacheVariant, srv, origin *peers.Server, sc string, round, size int, path string, args []string) {
	r0, errR0 := peers.ProcsRuntime(srv.Pid, v.serving)
	t0, errT0 := peers.TreeRuntime(srv.Pid)
	o0, errO0 := originRequests(origin.Env.Addr())
	s, _, ok := h.wrkRun(srv, sc, round, float64(size), kaConns, "http://"+srv.Env.Addr()+path, args...)
	o1, errO1 := originRequests(origin.Env.Addr())
	r1, errR1 := peers.ProcsRuntime(srv.Pid, v.serving)
	t1, errT1 := peers.TreeRuntime(srv.Pid)
	if !ok {
		return
	}
	if s.OK > 0 && errR0 == nil && errR1 == nil {
		s.CPUus = float64(r1-r0) / 1e3 / float64(s.OK)
	}
	if s.OK > 0 && errT0 == nil && errT1 == nil {
		s.TreeCPUus = float64(t1-t0) / 1e3 / float64(s.OK)
	}
	// The second reading's own request is counted in o1.
	s.OriginRequests = o1 - o0 - 1
	if err := errors.Join(errO0, errO1); err != nil {
		s.OriginRequests = -1
		h.note("%s %s: the origin's stub_status: %v", srv.Peer.Name, sc, err)
	}
	h.add(s)
	h.prog.logf("    all processes %.1f CPU-µs/req; origin answered %d requests for %d", s.TreeCPUus, s.OriginRequests, s.OK)
}

// checkCached makes two GETs of path to the server at addr, each on a
// connection of its own, and wants 200 and body want from both; from a
// cache (caching), the second must be a hit by the server's own account
// (cacheHit).
func checkCached(addr, path string, want []byte, name string, caching bool) error {
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	for i := range 2 {
		resp, err := c.Get("http://" + addr + path)
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return fmt.Errorf("GET %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK || string(got) != string(want) {
			return fmt.Errorf("GET %s answered %s with %d bytes, not 200 with the origin's %d", path, resp.Status, len(got), len(want))
		}
		if i == 1 && caching && !cacheHit(name, resp.Header) {
			return fmt.Errorf("GET %s a second time was not answered from the cache (Cache-Status %q, X-Cache-Status %q, X-Varnish %q)", path,
				resp.Header.Get("Cache-Status"), resp.Header.Get("X-Cache-Status"), resp.Header.Get("X-Varnish"))
		}
	}
	return nil
}

// cacheHit reports whether the cache peer name says, in h, that it
// answered from its store: Sluice's Cache-Status "hit", nginx's
// X-Cache-Status (its configuration adds $upstream_cache_status) HIT,
// Varnish's X-Varnish with two transaction ids (this request's and the
// one that stored the object).
func cacheHit(name string, h http.Header) bool {
	switch name {
	case "sluice-cache":
		_, params, _ := strings.Cut(h.Get("Cache-Status"), ";")
		for p := range strings.SplitSeq(params, ";") {
			if strings.TrimSpace(p) == "hit" {
				return true
			}
		}
		return false
	case "nginx-cache":
		return h.Get("X-Cache-Status") == "HIT"
	case "varnish":
		return len(strings.Fields(h.Get("X-Varnish"))) == 2
	}
	return false
}

// fsType names the file system holding dir (where nginx-cache writes its
// cache files), from statfs's magic number.
func fsType(dir string) string {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return "an unknown file system"
	}
	switch uint32(st.Type) {
	case unix.EXT4_SUPER_MAGIC:
		return "ext4"
	case unix.TMPFS_MAGIC:
		return "tmpfs (memory)"
	case unix.XFS_SUPER_MAGIC:
		return "XFS"
	case unix.BTRFS_SUPER_MAGIC:
		return "Btrfs"
	case unix.OVERLAYFS_SUPER_MAGIC:
		return "overlayfs"
	}
	return fmt.Sprintf("a file system of magic %#x", st.Type)
}
