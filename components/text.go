package components

import (
	"fmt"
	"net/http"

	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "text", Kind: KindSource, Scalar: "body",
		Example: `text: "Hello, world!\n"`,
	}, func(o TextOptions, _ Context) (pipe.Component, error) { return NewText(o) })
}

// TextOptions configures the text source. A config scalar
// (`text: "Hello, world!\n"`) sets Body.
type TextOptions struct {
	// Body is the response body, sent as is.
	Body string `yaml:"body"`

	// ContentType is the Content-Type of the body. Default
	// "text/plain; charset=utf-8".
	ContentType string `yaml:"content_type"`

	// Status is the response status, 200 to 599. Default 200. With 204 or
	// 304 the body must be empty.
	Status int `yaml:"status"`
}

// NewText returns the text Source: it answers every request with a fixed
// status and body and a Content-Length, so the response goes out in one
// write. The body is shared by all requests and never modified; the
// source is safe for concurrent use and allocates nothing per request.
func NewText(opts TextOptions) (pipe.Component, error) {
	status := opts.Status
	if status == 0 {
		status = http.StatusOK
	}
	if status < 200 || status > 599 {
		return nil, fmt.Errorf("text: status %d out of range 200..599", opts.Status)
	}
	if (status == http.StatusNoContent || status == http.StatusNotModified) && opts.Body != "" {
		return nil, fmt.Errorf("text: status %d cannot have a body", status)
	}
	ctype := opts.ContentType
	if ctype == "" {
		ctype = "text/plain; charset=utf-8"
	}
	body := []byte(opts.Body)
	length := int64(len(body))
	if status == http.StatusNoContent || status == http.StatusNotModified {
		length = -1 // no Content-Length: a 304's would describe another body
	}
	var content pipe.Content
	if len(body) > 0 {
		content = func(w pipe.Writer) error {
			_, err := w.Write(body)
			return err
		}
	}
	return pipe.Source(func(c *pipe.Conn) pipe.Content {
		h := c.Header()
		h.Set("Content-Type", ctype)
		h.SetContentLength(length)
		c.SetStatus(status)
		return content
	}), nil
}
