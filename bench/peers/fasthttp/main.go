// Command fasthttp-peer serves a directory with fasthttp's FS handler
// (default caching), as a benchmark peer for Sluice.
package main

import (
	"flag"
	"log"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "listen address")
	root := flag.String("root", ".", "document root")
	flag.Parse()

	fs := &fasthttp.FS{
		Root:       *root,
		IndexNames: []string{"index.html"},
	}
	s := &fasthttp.Server{
		Handler: fs.NewRequestHandler(),
		Name:    "fasthttp",
	}
	log.Fatal(s.ListenAndServe(*listen))
}
