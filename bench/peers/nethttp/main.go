// Command nethttp-peer serves a directory with the standard library's
// http.FileServer, as a benchmark peer for Sluice.
package main

import (
	"flag"
	"log"
	"net/http"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "listen address")
	root := flag.String("root", ".", "document root")
	flag.Parse()

	log.Fatal(http.ListenAndServe(*listen, http.FileServer(http.Dir(*root))))
}
