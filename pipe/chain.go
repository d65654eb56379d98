package pipe

// Chain runs components in order as plain function calls, stopping at the
// first that returns false. It is the fast way to run a pipeline; a
// ProcNetwork runs the same components as a process network.
type Chain []Component

// Handle runs the chain's components on c. A component that wraps the rest
// of the pipeline (net/http middleware, see Middleware) receives the
// remaining components as one.
func (ch Chain) Handle(c *Conn) bool {
	for i, comp := range ch {
		if w, ok := comp.(restWrapper); ok {
			return w.handleRest(c, ch[i+1:])
		}
		if !comp.Handle(c) {
			return false
		}
	}
	return true
}

// restWrapper is a component that must run the rest of the pipeline inside
// its own call.
type restWrapper interface {
	handleRest(c *Conn, rest Component) bool
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
