package files

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/engine"
)

// pathPlaceholder stands for the request path in an Options.Try candidate.
const pathPlaceholder = "$path"

// tryCandidate is one Options.Try entry: the request path followed by
// suffix, or, without usesPath, the fixed path.
type tryCandidate struct {
	usesPath bool
	suffix   string // with usesPath
	fixed    []byte // without
}

func parseTry(list []string) []tryCandidate {
	var out []tryCandidate
	for _, c := range list {
		if rest, ok := strings.CutPrefix(c, pathPlaceholder); ok {
			out = append(out, tryCandidate{usesPath: true, suffix: rest})
		} else {
			out = append(out, tryCandidate{fixed: []byte(c)})
		}
	}
	return out
}

// checkTry reports the first invalid Try candidate.
func (o Options) checkTry() error {
	for _, c := range o.Try {
		p, usesPath := c, false
		if rest, ok := strings.CutPrefix(c, pathPlaceholder); ok {
			p, usesPath = "/x"+rest, true // a sample request path
		}
		switch {
		case !strings.HasPrefix(p, "/"):
			return fmt.Errorf("try %q: want a path starting with / or with %s", c, pathPlaceholder)
		case strings.Contains(p, pathPlaceholder):
			return fmt.Errorf("try %q: %s is the only placeholder, and only at the start", c, pathPlaceholder)
		case strings.ContainsAny(p, "?#"):
			return fmt.Errorf("try %q: a candidate is a path, without a query or fragment", c)
		}
		clean, verdict := checkPath([]byte(p))
		switch {
		case verdict == pathRefused || !clean || cleanKey(p) != p:
			return fmt.Errorf("try %q is not a canonical path: no \"..\", \".\" or empty segments, NUL or backslash", c)
		case verdict == pathDotfile && o.Dotfiles != DotfilesAllow:
			return fmt.Errorf("try %q names a dotfile, which dotfiles: %s never serves", c, dotfilesName(o.Dotfiles))
		case !usesPath && o.StripPrefix != "":
			if _, ok := stripPrefix([]byte(p), o.StripPrefix); !ok {
				return fmt.Errorf("try %q is outside strip_prefix %q: candidates are request paths", c, o.StripPrefix)
			}
		}
	}
	return nil
}

func dotfilesName(d string) string {
	if d == "" {
		return DotfilesHide
	}
	return d
}

// lookupTry is lookup with Options.Try: the entry of the first candidate
// that is not 404, or notFound. A candidate built from the request path
// keeps the request's raw path, so it is refused wherever the request
// path would be; a fixed one was checked when the Server was made.
func (s *Server) lookupTry(r *engine.Request, force bool, now int64) (*entry, error) {
	var buf [256]byte
	for _, c := range s.try {
		raw, p := c.fixed, c.fixed
		if c.usesPath {
			raw, p = r.RawPath, append(append(buf[:0], r.Path...), c.suffix...)
		}
		e, err := s.lookupPath(raw, p, force, now)
		if err != nil || e.status != http.StatusNotFound {
			return e, err
		}
	}
	return notFound, nil
}
