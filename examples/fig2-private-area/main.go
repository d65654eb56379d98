// Command fig2-private-area is the server of the webpipes paper's Figure
// 3: a file server with a private area behind HTTP Basic authentication,
// a branching network.
//
//	/private/  →  basic_auth ─ok→ files
//	                   └─no──→ 401 Unauthorized, WWW-Authenticate
//	/          →  files
//
// The basic_auth pipe checks the credentials against an htpasswd file
// (bcrypt here); it either passes the request on to the file source or
// answers 401 itself and ends the pipeline. With -network every pipeline
// runs as a process network, one goroutine per component.
//
// Run it from this directory (user alice, password wonderland):
//
//	go run . -listen 127.0.0.1:8080
//	curl -i http://127.0.0.1:8080/private/
//	curl -i -u alice:wonderland http://127.0.0.1:8080/private/
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

// newServer builds the routes serving root, with root/private/ open only
// to the users of the htpasswd file. With network, each pipeline is a
// process network; stop ends their goroutines.
func newServer(root, htpasswd string, network bool) (comp pipe.Component, stop func(), err error) {
	files, err := components.NewFiles(components.FilesOptions{Root: root})
	if err != nil {
		return nil, nil, err
	}
	auth, err := components.NewBasicAuth(components.BasicAuthOptions{Realm: "private", Htpasswd: htpasswd})
	if err != nil {
		return nil, nil, err
	}

	b := &pipe.Builder{Network: network}
	pipeline, stop := b.Pipeline, b.Stop
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/private/", "/private"}, Pipeline: pipeline(auth, files)},
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
	root := flag.String("root", "public", "directory to serve; its private/ needs a login")
	htpasswd := flag.String("htpasswd", "users.htpasswd", "htpasswd file of the users allowed in private/")
	network := flag.Bool("network", false, "run each pipeline as a process network instead of a chain of calls")
	flag.Parse()

	comp, stop, err := newServer(*root, *htpasswd, *network)
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
