package components

import (
	"github.com/sluice-server/sluice/php"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "php", Kind: KindSource, Paths: []string{"root"},
		Example: `php: {root: /var/www/site, upstreams: ["unix:/run/php/php8.2-fpm.sock"], max_conns: 8, no_exec: [/uploads/]}`,
	}, func(o PHPOptions, x Context) (pipe.Component, error) {
		o.Processes = x.Processes
		if err := setName(&o.Name, x); err != nil {
			return nil, err
		}
		return NewPHP(o)
	})
}

// PHPOptions configures the php source: the options of package php,
// which are those of package fastcgi (upstreams, policy, max_conns…,
// root, split_path, index, no_exec, env, timeouts) and the shortcut's
// own (try, dotfiles, static), set by their yaml keys.
type PHPOptions struct {
	php.Options `yaml:",inline"`
}

// NewPHP returns the php source, a *php.Site: a PHP site in one
// component, as its front controller expects. A path naming a script
// (split after its first ".php" segment, the rest being PATH_INFO) runs
// it on the FastCGI server when it exists under root and may run (404 or
// 403 otherwise); any other path is tried as a static file (served by
// files, never when named like PHP source), then as a directory (a
// redirect to its slash form, then its index.php or index.html), then
// runs the front controller /index.php with the request's URI and
// query kept. Dotfiles (.htaccess, .env, .git) are refused with 404.
// See package php for the rules in full.
//
// It fails for options php.New or fastcgi.New refuses.
func NewPHP(opts PHPOptions) (pipe.Component, error) {
	s, err := php.New(opts.Options)
	if err != nil {
		return nil, err
	}
	return s, nil
}
