package daemon

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/engine"
)

// Switch is an engine.Handler that serves the routes of the current
// config and lets a new config take over without stopping: Swap makes
// every request that starts afterwards use the new config, while requests
// already in flight finish on the old one; the old config is closed once
// the last of them is done, or once Grace has passed. Switch is safe for
// concurrent use.
type Switch struct {
	// Grace bounds how long a config replaced by Swap waits for its
	// requests in flight: past it the config is closed under them, and
	// its components cut what those requests still do short (cgi kills
	// its programs). Zero waits however long they take. Set it before
	// the first Swap.
	Grace time.Duration

	cur atomic.Pointer[generation]
	mu  sync.Mutex // serializes Swap and Close

	retiredMu sync.Mutex
	retired   map[*generation]struct{} // retired and not yet closed

	// afterLoad, a test hook, runs in acquire between loading the
	// current generation and counting itself, where a Swap races it.
	afterLoad func()
}

// generation is one config being served. refs counts its requests in
// flight, plus one while it is current; the config is closed when the
// count reaches zero, when the grace period after its retirement ends, or
// at Close, whichever comes first. A request that counted itself after
// the generation was replaced (see acquire) can take the count from zero
// and back: the close it then repeats is done once.
type generation struct {
	sw      *Switch
	cfg     *config.Config
	handler engine.Handler
	refs    atomic.Int64
	retired atomic.Bool
	once    sync.Once

	graceTimer atomic.Pointer[time.Timer] // closes g when Grace has passed; stopped by close
}

// NewSwitch returns a Switch serving cfg.
func NewSwitch(cfg *config.Config) *Switch {
	s := &Switch{retired: map[*generation]struct{}{}}
	s.cur.Store(s.newGeneration(cfg))
	return s
}

func (s *Switch) newGeneration(cfg *config.Config) *generation {
	g := &generation{sw: s, cfg: cfg, handler: cfg.Handler()}
	g.refs.Store(1) // the Switch's own, until retire
	return g
}

// Config returns the config new requests are served with.
func (s *Switch) Config() *config.Config { return s.cur.Load().cfg }

// Serve implements engine.Handler with the current config's routes.
func (s *Switch) Serve(w engine.ResponseWriter, r *engine.Request) {
	g := s.acquire()
	defer g.release()
	g.handler.Serve(w, r)
}

// LogRefusal logs a request the engine refused with the current config
// (config.Config.LogRefusal): set it as engine.Server.OnRefused so that the
// access logs of the config being served record such requests too.
func (s *Switch) LogRefusal(rf *engine.Refusal) {
	g := s.acquire()
	defer g.release()
	g.cfg.LogRefusal(rf)
}

// acquire returns the current generation with its count raised. It checks
// that the generation is still current after counting the request: if a
// Swap came in between, the count may already have been seen at zero and
// the config closed, so it tries again with the new one.
func (s *Switch) acquire() *generation {
	for {
		g := s.cur.Load()
		if s.afterLoad != nil {
			s.afterLoad()
		}
		g.refs.Add(1)
		if s.cur.Load() == g {
			return g
		}
		g.release()
	}
}

// release drops a reference, closing the config with the last one. (A
// count of requests tested against a separate "retired" flag would not
// do: a request ending could see its count reach zero, a request starting
// count itself on that zero and then pass acquire's check before a Swap,
// and the first, reading the flag the Swap then set, close the config
// under the second.)
func (g *generation) release() {
	if g.refs.Add(-1) == 0 {
		g.close()
	}
}

// close closes the config, once, and forgets it as retired.
func (g *generation) close() {
	g.once.Do(func() {
		if t := g.graceTimer.Load(); t != nil {
			t.Stop() // it would keep g, and its config, alive until it fired
		}
		g.cfg.Close()
		g.sw.retiredMu.Lock()
		delete(g.sw.retired, g)
		g.sw.retiredMu.Unlock()
	})
}

// retire drops the Switch's reference to g, which it no longer serves new
// requests with: g closes once its requests in flight are done, or once
// the grace period has passed. It acts once.
func (g *generation) retire() {
	if !g.retired.CompareAndSwap(false, true) {
		return
	}
	s := g.sw
	s.retiredMu.Lock()
	s.retired[g] = struct{}{}
	s.retiredMu.Unlock()
	if s.Grace > 0 {
		g.graceTimer.Store(time.AfterFunc(s.Grace, g.close))
	}
	g.release()
}

// Swap makes cfg serve every request from now on and returns the config
// it replaces, which is closed when its last request in flight finishes,
// or when Grace has passed.
func (s *Switch) Swap(cfg *config.Config) (old *config.Config) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := s.cur.Swap(s.newGeneration(cfg))
	g.retire()
	return g.cfg
}

// Close closes the current config, and every config Swap replaced that is
// not closed yet, at once, under the requests that may still use them;
// it returns when they are closed (for cgi: when its programs are
// reaped). Call it once the server has stopped serving (after
// engine.Server.Shutdown returns): the Switch must not serve requests
// afterwards.
func (s *Switch) Close() {
	s.mu.Lock()
	s.cur.Load().retire()
	s.mu.Unlock()
	s.retiredMu.Lock()
	gens := make([]*generation, 0, len(s.retired))
	for g := range s.retired {
		gens = append(gens, g)
	}
	s.retiredMu.Unlock()
	for _, g := range gens {
		g.close()
	}
}
