package proxy

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// errClientBody marks a failure to read the client's request body.
var errClientBody = errors.New("proxy: reading the request body")

// sendBody writes the request head in x.reqHead (unless already sent)
// with the body, streamed through x.scratch: as it came for a
// Content-Length, re-chunked for a chunked one, with the client's trailer
// fields. Each piece goes in one writev with the framing around it.
func (p *Proxy) sendBody(x *exchange, nc net.Conn, r *engine.Request) error {
	chunked := r.ContentLength < 0
	var vec [4][]byte
	var size [20]byte
	out := append(vec[:0], x.reqHead)
	for {
		n, err := r.Body.Read(x.scratch)
		if err != nil && err != io.EOF {
			return fmt.Errorf("%w: %w", errClientBody, err)
		}
		if n > 0 {
			if chunked {
				hdr := strconv.AppendInt(size[:0], int64(n), 16)
				out = append(out, append(hdr, "\r\n"...), x.scratch[:n], crlf)
			} else {
				out = append(out, x.scratch[:n])
			}
		}
		if err == io.EOF && chunked {
			last := []byte("0\r\n") // once a request: the trailer fields follow
			for _, f := range r.Trailer {
				if !httpgrammar.IsHopByHop(f.Name) && !isFramingField(f.Name) {
					last = appendField(last, f.Name, f.Value)
				}
			}
			out = append(out, append(last, "\r\n"...))
		}
		nc.SetWriteDeadline(time.Now().Add(p.headerTO))
		bufs := net.Buffers(out)
		if _, werr := bufs.WriteTo(nc); werr != nil {
			return werr
		}
		if err == io.EOF {
			return nil
		}
		out = vec[:0]
	}
}

var crlf = []byte("\r\n")
