// Command fig3-hello is the example server of the webpipes paper's
// section 3.1: a text source at /hello and a file server for the rest.
//
//	/hello  →  text "Hello, world!\n"
//	/       →  files
//
// Run it from this directory:
//
//	go run . -listen 127.0.0.1:8080
//	curl http://127.0.0.1:8080/hello
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// newServer builds the routes: /hello answers text, the rest is served
// from root.
func newServer(root string) (pipe.Component, error) {
	hello, err := components.NewText(components.TextOptions{Body: "Hello, world!\n"})
	if err != nil {
		return nil, err
	}
	files, err := components.NewFiles(components.FilesOptions{Root: root})
	if err != nil {
		return nil, err
	}
	return pipe.NewRouter(
		pipe.Route{Match: []string{"/hello"}, Pipeline: hello},
		pipe.Route{Match: []string{"/"}, Pipeline: files},
	)
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	root := flag.String("root", "public", "directory to serve")
	flag.Parse()

	comp, err := newServer(*root)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := engine.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(comp), ServerHeader: "sluice-example"}
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	go func() {
		<-ctx.Done()
		sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer scancel()
		srv.Shutdown(sctx)
	}()
	log.Printf("serving on http://%s/", ln.Addr())
	if err := srv.Serve(ln); err != engine.ErrServerClosed {
		log.Fatal(err)
	}
}
