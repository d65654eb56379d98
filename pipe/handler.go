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
