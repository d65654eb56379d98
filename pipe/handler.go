package pipe

import "github.com/sluice-server/sluice/engine"

// Handler serves a pipeline with the engine: for every request it runs
// the setup phase (comp.Handle) and then the content phase.
func Handler(comp Component) engine.Handler {
	return engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		c := acquireConn(w, r)
		comp.Handle(c)
		c.Finish()
		releaseConn(c)
	})
}

// Handler returns an engine.Handler that serves comp as Handler(comp)
// does, on Conns that start with c's path parameters and values (see
// Param and Value) and request ID, copied now: for a component that sends a request of
// its own down the pipeline on c's behalf, possibly after c's request
// has ended (a cache revalidating in the background), so that the
// components it runs see the route's captures and what earlier
// components recorded. It must be called while c is valid; the handler
// it returns may be used from any goroutine, any number of times.
func (c *Conn) Handler(comp Component) engine.Handler {
	params := append([]keyValue(nil), c.params...)
	values := append([]keyValue(nil), c.values...)
	id := c.idBuf
	idLen := c.idLen
	return engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		d := acquireConn(w, r)
		d.params = append(d.params, params...)
		d.values = append(d.values, values...)
		d.idBuf, d.idLen = id, idLen
		comp.Handle(d)
		d.Finish()
		releaseConn(d)
	})
}
