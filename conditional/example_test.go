package conditional_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-server/sluice/conditional"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/sluicetest"
)

// serveBytes answers a GET or HEAD with body, a representation of media
// type ctype with validators v, as a cache answers from a stored
// response: 304 or 412 for the preconditions, 206 or 416 for a Range
// field that applies, else 200.
func serveBytes(w engine.ResponseWriter, r *engine.Request, v *conditional.Validators, body []byte, ctype string) {
	h := w.Header()
	if v.ETag != "" {
		h.Set("ETag", v.ETag)
	}
	if v.LastModified != "" {
		h.Set("Last-Modified", v.LastModified)
	}
	h.Set("Accept-Ranges", "bytes")
	switch conditional.Precondition(r, v) {
	case http.StatusNotModified:
		w.WriteHeader(http.StatusNotModified)
		return
	case http.StatusPreconditionFailed:
		w.WriteHeader(http.StatusPreconditionFailed)
		return
	}
	size := int64(len(body))
	if rh := r.HeaderList("Range"); rh != nil && string(r.Method) == "GET" && conditional.RangeApplies(r, v) {
		ranges, verdict := conditional.ParseRange(rh, size, 16)
		switch verdict {
		case conditional.RangeUnsatisfiable:
			h.Set("Content-Range", conditional.UnsatisfiedRange(size))
			w.WriteHeader(http.StatusRequestedRangeNotSatisfiable)
			return
		case conditional.RangeOK:
			if len(ranges) == 1 {
				rg := ranges[0]
				h.Set("Content-Type", ctype)
				h.Set("Content-Range", conditional.ContentRange(rg, size))
				h.SetContentLength(rg.N)
				w.WriteHeader(http.StatusPartialContent)
				w.Write(body[rg.Off:rg.End()])
				return
			}
			m := conditional.NewMultipart(ranges, size, ctype)
			h.Set("Content-Type", m.ContentType)
			h.SetContentLength(m.Length)
			w.WriteHeader(http.StatusPartialContent)
			m.Send(w, func(rg conditional.Range) error {
				_, err := w.Write(body[rg.Off:rg.End()])
				return err
			})
			return
		}
	}
	h.Set("Content-Type", ctype)
	h.SetContentLength(size)
	w.Write(body)
}

// A server answers conditional and range requests for a representation
// held in memory.
func Example() {
	body := []byte("0123456789abcdefghij")
	modTime := time.Date(2015, 10, 21, 7, 28, 0, 0, time.UTC)
	v := &conditional.Validators{
		ETag:         `"v1"`,
		LastModified: modTime.Format(http.TimeFormat),
		ModTime:      modTime,
	}
	s, err := sluicetest.Start(engine.HandlerFunc(func(w engine.ResponseWriter, r *engine.Request) {
		serveBytes(w, r, v, body, "text/plain")
	}))
	if err != nil {
		panic(err)
	}
	defer s.Close()

	for _, fields := range [][2]string{
		{"If-None-Match", `W/"v1"`},
		{"If-Match", `"v0"`},
		{"Range", "bytes=-5"},
		{"Range", "bytes=100-"},
	} {
		req, _ := http.NewRequest("GET", s.URL+"/", nil)
		req.Header.Set(fields[0], fields[1])
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Println(strings.TrimSpace(fmt.Sprintf("%s: %s -> %d %q %s", fields[0], fields[1], resp.StatusCode, b,
			resp.Header.Get("Content-Range"))))
	}
	// Output:
	// If-None-Match: W/"v1" -> 304 ""
	// If-Match: "v0" -> 412 ""
	// Range: bytes=-5 -> 206 "fghij" bytes 15-19/20
	// Range: bytes=100- -> 416 "" bytes */20
}
