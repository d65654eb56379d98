// Command sluicecompress serves one file, held in memory, through the
// compress filter: the pipeline pipe.Chain{source, compress} on
// engine.Server. bench/compress.sh runs it against nginx with `gzip on`.
//
// Every request path gets the file (Content-Type text/html, with its
// Content-Length, which compress drops when it compresses).
package main

import (
	"flag"
	"log"
	"os"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "listen address")
	file := flag.String("file", "", "file to serve (required)")
	encodings := flag.String("encoding", "gzip", "content coding offered")
	level := flag.Int("level", 1, "compression level (nginx gzip_comp_level 1 is its default)")
	flag.Parse()
	if *file == "" {
		log.Fatal("sluicecompress: -file is required")
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		log.Fatal(err)
	}
	content := func(w pipe.Writer) error {
		_, err := w.Write(body)
		return err
	}
	source := pipe.Source(func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		h.Set("Content-Type", "text/html")
		h.SetContentLength(int64(len(body)))
		return content
	})
	compress, err := components.NewCompress(components.CompressOptions{
		Encodings: []string{*encodings},
		Levels:    map[string]int{*encodings: *level},
	})
	if err != nil {
		log.Fatal(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{source, compress})}
	log.Fatal(srv.ListenAndServe(*listen))
}
