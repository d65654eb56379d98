package main

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// Both routes answer the same 4 KiB, many times over one connection.
func TestRoutesAgree(t *testing.T) {
	comp, stop, err := newServer()
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(comp)}
	go srv.Serve(ln)
	defer srv.Close()
	for _, path := range []string{"/chain", "/network"} {
		for i := 0; i < 50; i++ {
			resp, err := http.Get("http://" + ln.Addr().String() + path)
			if err != nil {
				t.Fatal(err)
			}
			b, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil || resp.StatusCode != 200 || !bytes.Equal(b, body4k) || resp.ContentLength != 4096 {
				t.Fatalf("%s: %d, %d bytes, %v", path, resp.StatusCode, len(b), err)
			}
		}
	}
}
