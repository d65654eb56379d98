package components_test

import (
	"fmt"
	"io"
	"net/http"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// A rewrite in front of a source: the source sees the path and query
// the rewrite made from the route's path parameter.
func ExampleNewRewrite() {
	rw, err := components.NewRewrite(components.RewriteOptions{To: "/users/$name.html?via=rewrite"})
	if err != nil {
		panic(err)
	}
	show := pipe.Source(func(c *pipe.Conn) pipe.Content {
		body := string(c.Request.Path) + "?" + string(c.Request.Query) + "\n"
		return func(w pipe.Writer) error { _, err := io.WriteString(w, body); return err }
	})
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/u/{name}"}, Pipeline: pipe.Chain{rw, show}})
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(rt)}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	resp, err := http.Get("http://" + ln.Addr().String() + "/u/ann%20b")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(body))
	// Output:
	// /users/ann b.html?via=rewrite
}
