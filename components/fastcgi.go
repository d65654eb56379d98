package components

import (
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "fastcgi", Kind: KindSource, Paths: []string{"root"},
		Example: `fastcgi: {upstreams: ["unix:/run/php/php8.2-fpm.sock"], root: ./public, max_conns: 8}`,
	}, func(o FastCGIOptions, x Context) (pipe.Component, error) {
		if err := setName(&o.Name, x); err != nil {
			return nil, err
		}
		return NewFastCGI(o)
	})
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
// streams its response back. Only a regular file under root whose name
// ends in a split_path extension runs: not one reached by a symbolic
// link out of root, under a no_exec prefix, or named with a control
// byte or a dot-file segment. Set max_conns to PHP-FPM's
// pm.max_children: PHP-FPM holds a worker for each open connection,
// idle or not, and requests beyond it then wait in Sluice's queue.
// Authorization reaches the application unless an authentication
// component took it; Proxy never becomes HTTP_PROXY. See package
// fastcgi and docs/fastcgi.md for the client in full: the script rules,
// the parameters, PHP-FPM's settings, the limits. It fails for options
// fastcgi.New refuses.
func NewFastCGI(opts FastCGIOptions) (pipe.Component, error) {
	cl, err := fastcgi.New(opts.Options)
	if err != nil {
		return nil, err
	}
	return cl, nil
}
