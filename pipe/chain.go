package pipe

// Chain runs components in order as plain function calls, stopping at the
// first that returns false. It is the fast way to run a pipeline; a
// ProcNetwork runs the same components as a process network.
type Chain []Component

// Handle runs the chain's components on c. A component that wraps the rest
// of the pipeline (a Wrapper: net/http middleware, a cache) receives the
// remaining components as one, and Handle returns what it returns.
func (ch Chain) Handle(c *Conn) bool {
	for i, comp := range ch {
		if w, ok := comp.(Wrapper); ok {
			return w.HandleRest(c, ch[i+1:])
		}
		if !comp.Handle(c) {
			return false
		}
	}
	return true
}

// Wrapper is a Component that runs the rest of the pipeline inside its own
// call, so that it can decide whether the rest runs at all and see what
// it produces: net/http middleware (Middleware), a cache that answers
// from its store or stores what the rest produced. A Chain and a
// ProcNetwork call HandleRest instead of Handle, with rest the
// components after the Wrapper as one Component (an empty Chain when
// there are none); Handle is called only where a Wrapper runs on its own,
// outside any Chain or ProcNetwork, and should behave as HandleRest with
// nothing after it.
//
// HandleRest runs in the setup phase on the request's goroutine. It may
// call rest.Handle(c) at most once, on the Conn it was given (to place a
// filter between the rest's filters and the earlier ones, see
// Conn.NestFilters), or serve rest to a writer of its own on another
// request (Handler(rest).Serve); its result is the pipeline's, as
// Component.Handle's is. Like every Component, a Wrapper must be safe for
// concurrent use.
type Wrapper interface {
	Component
	HandleRest(c *Conn, rest Component) bool
}

// If runs then only for requests that satisfy cond (a conditional
// component); for the others it does nothing and the pipeline goes on.
func If(cond func(c *Conn) bool, then Component) Component {
	return Pipe(func(c *Conn) bool {
		if cond(c) {
			return then.Handle(c)
		}
		return true
	})
}

// Branch sends the request down the first of branches whose condition
// holds, else down otherwise (which may be nil: the pipeline then goes on).
// Whatever branch runs decides whether the pipeline continues.
func Branch(otherwise Component, branches ...Case) Component {
	return Pipe(func(c *Conn) bool {
		for _, b := range branches {
			if b.When(c) {
				return b.Then.Handle(c)
			}
		}
		if otherwise != nil {
			return otherwise.Handle(c)
		}
		return true
	})
}

// Case is one branch of Branch.
type Case struct {
	When func(c *Conn) bool
	Then Component
}
