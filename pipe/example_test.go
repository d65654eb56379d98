package pipe_test

import (
	"fmt"
	"html/template"
	"io"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// hello is a Source: it sets the header in the setup phase and writes the
// body in the content phase.
func hello(c *pipe.Conn) pipe.Content {
	c.Header().Set("Content-Type", "text/plain; charset=utf-8")
	return func(w pipe.Writer) error {
		_, err := io.WriteString(w, "hello, world\n")
		return err
	}
}

// shout is a Filter that upper-cases the body.
func shout(c *pipe.Conn) pipe.Wrap {
	c.Header().SetContentLength(-1)
	return func(next pipe.Writer) pipe.Writer { return upperWriter{next} }
}

type upperWriter struct{ pipe.Writer }

func (u upperWriter) Write(p []byte) (int, error) {
	return u.Writer.Write([]byte(strings.ToUpper(string(p))))
}
func (u upperWriter) Close() error { return nil }

// A router with two routes: /hello answers plainly, /loud/ through a filter.
func Example() {
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/hello"}, Pipeline: pipe.Source(hello)},
		pipe.Route{Match: []string{"/loud/"}, Pipeline: pipe.Chain{pipe.Source(hello), pipe.Filter(shout)}},
	)
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(rt)}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	for _, path := range []string{"/hello", "/loud/x", "/other"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// /hello 200 hello, world
	// /loud/x 200 HELLO, WORLD
	// /other 404 404 Not Found: no route for this path
}

// A route with path parameters: {id:int} takes one segment that must be
// an integer, and the pipeline reads it with Param. A segment that is not
// an integer is answered 400 before the pipeline runs.
func ExampleConn_Param() {
	article := pipe.Source(func(c *pipe.Conn) pipe.Content {
		id := c.Param("id")
		return func(w pipe.Writer) error {
			_, err := fmt.Fprintf(w, "article %s\n", id)
			return err
		}
	})
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/article/{id:int}"}, Pipeline: article})
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(rt)}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	for _, path := range []string{"/article/42", "/article/%34%32", "/article/new"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// /article/42 200 article 42
	// /article/%34%32 200 article 42
	// /article/new 400 400 Bad Request: path parameter id: not an integer
}

// Error pages for a whole server: the router's own 404 and a route's 403
// get HTML pages that show the request, escaped; a route may set its own.
func ExampleErrorPages() {
	notFound := template.Must(template.New("404").Parse(
		"<h1>{{.Status}} {{.StatusText}}</h1><p>Nothing at {{.Path}}.</p>\n"))
	errs := template.Must(template.New("4xx").Parse("<h1>{{.Status}}: {{.Message}}</h1>\n"))
	pages, err := pipe.NewErrorPages(map[string]*template.Template{"404": notFound, "4xx": errs})
	if err != nil {
		panic(err)
	}
	deny := pipe.Pipe(func(c *pipe.Conn) bool { return c.Error(http.StatusForbidden, "not for you") })
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/private/"}, Pipeline: deny})
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{pages, rt})}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	for _, path := range []string{"/private/x", "/%3Cb%3E"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%d %s %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	// Output:
	// 403 text/html; charset=utf-8 <h1>403: not for you</h1>
	// 404 text/html; charset=utf-8 <h1>404 Not Found</h1><p>Nothing at /&lt;b&gt;.</p>
}

// A source whose body is kept in pieces sends them with WriteBuffers: in
// one writev with the header when no filter changes the content, and a
// piece at a time through one that does (here shout).
func ExampleWriteBuffers() {
	pieces := [][]byte{[]byte("kept "), []byte("in "), []byte("pieces\n")}
	stored := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().SetContentLength(int64(len("kept in pieces\n")))
		return func(w pipe.Writer) error {
			_, err := pipe.WriteBuffers(w, pieces)
			return err
		}
	})
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/plain"}, Pipeline: stored},
		pipe.Route{Match: []string{"/loud"}, Pipeline: pipe.Chain{stored, pipe.Filter(shout)}},
	)
	if err != nil {
		panic(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(rt)}
	ln, _ := engine.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(ln)
	defer srv.Close()

	for _, path := range []string{"/plain", "/loud"} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			panic(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Printf("%s %d %s", path, resp.StatusCode, body)
	}
	// Output:
	// /plain 200 kept in pieces
	// /loud 200 KEPT IN PIECES
}
