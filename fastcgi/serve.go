package fastcgi

import (
	"net/http"

	"github.com/sluice-server/sluice/pipe"
)

// serve is the content phase: one request to an upstream.
func (cl *Client) serve(c *pipe.Conn, w pipe.Writer, s *Script) error {
	c.SetStatus(http.StatusBadGateway)
	_, err := w.Write([]byte("502 Bad Gateway\n"))
	return err
}

// check sends one active health check to u.
func (cl *Client) check(u *host) bool { return false }

// reportCheck logs a change of u's health the active checks found.
func (cl *Client) reportCheck(u *host, change int) {
	switch change {
	case -1:
		cl.log.Warn("fastcgi: upstream down: health check failed", "upstream", u.Name, "checks", cl.set.Health.Fall)
	case +1:
		cl.log.Info("fastcgi: upstream up again: health check passed", "upstream", u.Name, "checks", cl.set.Health.Rise)
	}
}
