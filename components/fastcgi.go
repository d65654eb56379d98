package components

import (
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "fastcgi", Kind: KindSource, Paths: []string{"root"},
		Example: `fastcgi: {upstreams: ["unix:/run/php/php8.2-fpm.sock"], root: ./public, max_conns: 8}`,
	}, func(o FastCGIOptions, _ Context) (pipe.Component, error) { return NewFastCGI(o) })
}

// FastCGIOptions configures the fastcgi source: the options of package
// fastcgi, which a config file sets by their yaml keys (the upstream
// ones, upstreams, policy, max_conns…, inline as the proxy's). root is
// relative to the config file's directory; script to root.
type FastCGIOptions struct {
	fastcgi.Options `yaml:",inline"`
}

// NewFastCGI returns the fastcgi source, a *fastcgi.Client: a Source that
// runs, for each request, the script under root that the path names (or
// the one script option) on a FastCGI server such as PHP-FPM, and
// streams its response back. See package fastcgi for the client in full:
// the script rules, the parameters, the limits. It fails for options
// fastcgi.New refuses.
func NewFastCGI(opts FastCGIOptions) (pipe.Component, error) {
	cl, err := fastcgi.New(opts.Options)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
