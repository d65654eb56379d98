package pipe

import (
	"log/slog"
	"net/http"
	"runtime/debug"
	"sync"

	"github.com/sluice-server/sluice/engine"
)

// ProcNetwork runs components as a process network, the paper's second
// strategy: one goroutine per component, joined by channels, each passing
// a Conn to the next once it has done its part of the setup phase. The
// same components run unchanged in a Chain, with the same result; a
// ProcNetwork costs a goroutine hand-off per component per request (see
// the benchmark in docs/pipe.md) in exchange for the isolation of a
// network.
//
// A Wrapper (net/http middleware, see Middleware) must run the rest of the
// pipeline, and for middleware the content phase, inside its own call, so it is not a stage: the
// components after it form a network of their own, and the Wrapper runs
// on the goroutine that called Handle, with that network as its rest. A response a middleware writes therefore never holds up the
// stages, which serve other requests meanwhile.
//
// A ProcNetwork is a Component, so it can serve a route (NetworkHandler)
// or be one stage of a larger pipeline. It is safe for concurrent use;
// requests pass through each stage one at a time, in order.
type ProcNetwork struct {
	in   chan *Conn
	once sync.Once
	wg   sync.WaitGroup

	// wrap is the first component that wraps the rest of the pipeline
	// (net/http middleware), or nil; rest is the network of the
	// components after it.
	wrap Wrapper
	rest *ProcNetwork
}

// NewProcNetwork starts one goroutine per component (but for net/http
// middleware, which runs on the caller's). Stop ends them.
func NewProcNetwork(components ...Component) *ProcNetwork {
	n := &ProcNetwork{in: make(chan *Conn)}
	in := n.in
	for i, comp := range components {
		if w, ok := comp.(Wrapper); ok {
			n.wrap, n.rest = w, NewProcNetwork(components[i+1:]...)
			break
		}
		out := make(chan *Conn)
		n.wg.Add(1)
		go n.stage(comp, in, out)
		in = out
	}
	n.wg.Add(1)
	go n.sink(in)
	return n
}

func (n *ProcNetwork) stage(comp Component, in <-chan *Conn, out chan<- *Conn) {
	defer n.wg.Done()
	defer close(out)
	for c := range in {
		if handleSafely(comp, c) {
			out <- c
		} else {
			c.done <- false
		}
	}
}

// handleSafely runs comp on a stage goroutine, where a panic would take the
// process down: it answers 500 instead, like the engine does for handlers.
func handleSafely(comp Component, c *Conn) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			slog.Error("pipeline component panic", "panic", v, "stack", string(debug.Stack()))
			ok = c.Error(http.StatusInternalServerError, "internal server error")
		}
	}()
	return comp.Handle(c)
}

func (n *ProcNetwork) sink(in <-chan *Conn) {
	defer n.wg.Done()
	for c := range in {
		c.done <- true
	}
}

// Handle sends c through the network and waits for it to come out. When
// the network holds net/http middleware, the middleware then runs here,
// with the rest of the network inside it, and Handle returns what it
// returns (false: the middleware has finished the response).
func (n *ProcNetwork) Handle(c *Conn) bool {
	n.in <- c
	if !<-c.done {
		return false
	}
	if n.wrap != nil {
		return n.wrap.HandleRest(c, n.rest)
	}
	return true
}

// Stop ends the network's goroutines once the requests in it are through.
// Handle must not be called after Stop.
func (n *ProcNetwork) Stop() {
	n.once.Do(func() { close(n.in) })
	n.wg.Wait()
	if n.rest != nil {
		n.rest.Stop()
	}
}

// NetworkHandler serves a process network with the engine; it is Handler
// for a ProcNetwork, named after the paper's handler.
func NetworkHandler(n *ProcNetwork) engine.Handler { return Handler(n) }

// Builder makes pipelines that run either as Chains or, with Network set,
// as ProcNetworks, so one program can switch strategies with a flag. Stop
// ends the networks it started. A Builder is not safe for concurrent use
// while building; the pipelines it returns are.
type Builder struct {
	Network  bool
	networks []*ProcNetwork
}

// Pipeline returns comps as a Chain, or as a started ProcNetwork.
func (b *Builder) Pipeline(comps ...Component) Component {
	if !b.Network {
		return Chain(comps)
	}
	n := NewProcNetwork(comps...)
	b.networks = append(b.networks, n)
	return n
}

// Stop stops every ProcNetwork the builder started.
func (b *Builder) Stop() {
	for _, n := range b.networks {
		n.Stop()
	}
	b.networks = nil
}
