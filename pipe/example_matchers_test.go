package pipe_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// Routes of one pattern chosen by a condition (the route without one is
// the fallback), and a regular-expression pattern whose groups are path
// parameters, by name and by number.
func ExampleRoute_when() {
	answer := func(name string) pipe.Source {
		return func(c *pipe.Conn) pipe.Content {
			body := name + " " + c.Param("id") + " " + c.Param("1") + "\n"
			return func(w pipe.Writer) error { _, err := io.WriteString(w, body); return err }
		}
	}
	beta := pipe.MatcherFunc(func(r *engine.Request) bool { return string(r.Header("X-Beta")) == "1" })
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{`~ ^/user/(?P<id>[0-9]+)$`}, When: []pipe.Matcher{beta}, Pipeline: answer("beta")},
		pipe.Route{Match: []string{`~ ^/user/(?P<id>[0-9]+)$`}, Pipeline: answer("user")},
	)
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(rt)}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	for _, beta := range []string{"0", "1"} {
		req, _ := http.NewRequest("GET", "http://"+ln.Addr().String()+"/user/42", nil)
		req.Header.Set("X-Beta", beta)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("X-Beta: %s: %s", beta, body)
	}
	// Output:
	// X-Beta: 0: user 42 42
	// X-Beta: 1: beta 42 42
}
