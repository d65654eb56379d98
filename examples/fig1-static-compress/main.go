// Command fig1-static-compress is the server of the webpipes paper's
// Figures 1 and 2: a static file server that compresses the files it
// serves from js/ and css/ and sends the others as they are.
//
//	/js/, /css/  →  files → compress
//	/            →  files
//
// Each route is a pipeline: the file source sets up the response and
// writes the file, the compress filter wraps the content writer when the
// client accepts a coding (Figure 2's content pipeline). With -network
// every pipeline runs as a process network, one goroutine per component,
// as in Figure 1; without it, as a chain of function calls. The answers
// are the same.
//
// Run it from this directory:
//
//	go run . -listen 127.0.0.1:8080
//	curl -s --compressed -v http://127.0.0.1:8080/css/site.css
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

// newServer builds the routes serving root. With network, each pipeline
// is a process network; stop ends their goroutines.
func newServer(root string, network bool) (comp pipe.Component, stop func(), err error) {
	files, err := components.NewFiles(components.FilesOptions{Root: root})
	if err != nil {
		return nil, nil, err
	}
	compress, err := components.NewCompress(components.CompressOptions{}) // zstd, br, gzip
	if err != nil {
		return nil, nil, err
	}

	b := &pipe.Builder{Network: network}
	pipeline, stop := b.Pipeline, b.Stop
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/js/", "/css/"}, Pipeline: pipeline(files, compress)},
		pipe.Route{Match: []string{"/"}, Pipeline: pipeline(files)},
	)
	if err != nil {
		stop()
		return nil, nil, err
	}
	return rt, stop, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	root := flag.String("root", "public", "directory to serve")
	network := flag.Bool("network", false, "run each pipeline as a process network instead of a chain of calls")
	flag.Parse()

	comp, stop, err := newServer(*root, *network)
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	if err := serve(*listen, comp); err != nil {
		log.Fatal(err)
	}
}

// serve serves comp on addr until SIGINT or SIGTERM, then shuts down.
func serve(addr string, comp pipe.Component) error {
	ln, err := engine.Listen("tcp", addr)
	if err != nil {
		return err
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
		return err
	}
	return nil
}
