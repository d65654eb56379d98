package upstream_test

import (
	"fmt"

	"github.com/sluice-server/sluice/upstream"
)

// conn is a transport's connection: what a Group's pools hold.
type conn struct{ name string }

func (c *conn) Close() error { return nil }

// A transport asks a host for a connection, dials one on the place it is
// given when none is idle, and puts it back after a clean exchange.
func Example() {
	bal, _ := upstream.NewBalancer(upstream.RoundRobin, "")
	var g *upstream.Group[*conn]
	put := func(c *conn) { g.Hosts()[0].Keep(c, upstream.Now()) }
	g, err := upstream.NewGroup([]string{"http://127.0.0.1:9000"}, bal, upstream.Config{MaxConns: 8, MaxIdleConns: 4}, put)
	if err != nil {
		panic(err)
	}
	defer g.Close()

	h := g.Pick(0, nil, nil)
	for range 2 {
		c, _, err := h.Get(upstream.Now(), false)
		if err != nil {
			panic(err)
		}
		if c == nil {
			c = &conn{name: "dialled"} // a transport would wrap h.Dial's socket
		} else {
			c.name = "reused"
		}
		fmt.Println(h.Name, c.name)
		if !h.HandOff(c) {
			h.Keep(c, upstream.Now())
		}
	}
	// Output:
	// http://127.0.0.1:9000 dialled
	// http://127.0.0.1:9000 reused
}

// A transport drives a request's Attempts: for each host picked it gets
// a connection, starts the attempt, and reports the outcome; a failure
// that may be tried again goes to another host. Here the first host
// refuses the connection.
func ExampleAttempts() {
	bal, _ := upstream.NewBalancer(upstream.RoundRobin, "")
	g, err := upstream.NewGroup([]string{"http://127.0.0.1:9001", "http://127.0.0.1:9002"}, bal, upstream.Config{}, func(*conn) {})
	if err != nil {
		panic(err)
	}
	defer g.Close()

	a := g.Begin(true, 1) // a GET without a body: safe; one retry
	for a.Next(nil, nil, nil) {
		h := a.Host()
		c, granted := a.Granted()
		if !granted {
			if c, _, err = h.Get(a.Now(), false); err == upstream.ErrFull {
				a.Full()
				continue
			}
		}
		if !a.Start() {
			continue // h left the set meanwhile (Group.Replace)
		}
		if h.Index() == 0 {
			fmt.Println(h.Name, "refused")
			h.Release() // the dial failed: its place goes back
			a.Failed(true, true)
			continue
		}
		if c == nil {
			c = &conn{name: "dialled"}
		}
		fmt.Println(h.Name, c.name)
		h.Keep(c, upstream.Now())
		a.Done()
		break
	}
	fmt.Println("err:", a.Err())
	// Output:
	// http://127.0.0.1:9001 refused
	// http://127.0.0.1:9002 dialled
	// err: <nil>
}
