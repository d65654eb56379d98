// Command pipebench serves the same five-component pipeline two ways, for
// an end-to-end answer to the webpipes paper's Figure 4 question: what
// does a process network cost over plain function calls?
//
//	/chain    →  Chain{pass, pass, source 4 KiB, filter, pass}
//	/network  →  ProcNetwork{pass, pass, source 4 KiB, filter, pass}
//
// The components are those of BenchmarkPipeline in package pipe: two
// pipes that pass, a source of 4 KiB (the paper's file size), a filter
// that leaves the content alone, and another pipe. run.sh drives it with
// wrk over loopback, client and server pinned to different cores.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

var body4k = make([]byte, 4096)

// components returns the benchmark pipeline's five components.
func components() []pipe.Component {
	pass := pipe.Pipe(func(c *pipe.Conn) bool { return true })
	src := pipe.Source(func(c *pipe.Conn) pipe.Content {
		c.Header().Set("Content-Type", "application/octet-stream")
		c.Header().SetContentLength(int64(len(body4k)))
		return func(w pipe.Writer) error { _, err := w.Write(body4k); return err }
	})
	ident := pipe.Filter(func(c *pipe.Conn) pipe.Wrap { return nil })
	return []pipe.Component{pass, pass, src, ident, pass}
}

// newServer builds the two routes; stop ends the network's goroutines.
func newServer() (comp pipe.Component, stop func(), err error) {
	n := pipe.NewProcNetwork(components()...)
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/chain"}, Pipeline: pipe.Chain(components())},
		pipe.Route{Match: []string{"/network"}, Pipeline: n},
	)
	if err != nil {
		n.Stop()
		return nil, nil, err
	}
	return rt, n.Stop, nil
}

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "address to listen on")
	flag.Parse()

	comp, stop, err := newServer()
	if err != nil {
		log.Fatal(err)
	}
	defer stop()
	ln, err := engine.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(comp)}
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
