// Command sluicecompress serves one file, held in memory, through the
// compress filter: the pipeline pipe.Chain{source, compress} on
// engine.Server. bench/compress.sh runs it against nginx with `gzip on`.
//
// Every request path gets the file (Content-Type text/html, with its
// Content-Length, which compress drops when it compresses); with -files the
// files component serves the file's directory instead (the route
// [files, compress]).
package main

import (
	"flag"
	"log"
	"os"
	"path/filepath"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8080", "listen address")
	file := flag.String("file", "", "file to serve (required)")
	encodings := flag.String("encoding", "gzip", "content coding offered")
	level := flag.Int("level", 1, "compression level (nginx gzip_comp_level 1 is its default)")
	fromFiles := flag.Bool("files", false, "serve the file's directory with the files component instead of from memory")
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
	var source pipe.Component = pipe.Source(func(c *pipe.Conn) pipe.Content {
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
	if *fromFiles {
		files, err := components.NewFiles(components.FilesOptions{Root: filepath.Dir(*file)})
		if err != nil {
			log.Fatal(err)
		}
		source = files
	}
	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{source, compress})}
	log.Fatal(srv.ListenAndServe(*listen))
}
