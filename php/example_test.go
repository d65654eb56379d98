package php_test

import (
	"context"
	"log"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/php"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// A WordPress site on PHP-FPM's socket, its uploads never executable,
// served on port 8080: what the config entry
// `php: {root: /var/www/wordpress, upstreams: [...], max_conns: 16, no_exec: [...]}`
// builds.
func ExampleNew() {
	site, err := php.New(php.Options{
		Options: fastcgi.Options{
			Options: upstream.Options{Upstreams: []string{"unix:/run/php/php8.2-fpm.sock"}, MaxConns: 16},
			Root:    "/var/www/wordpress",
			NoExec:  []string{"/wp-content/uploads/"},
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer site.Close()
	ln, err := engine.Listen("tcp", ":8080")
	if err != nil {
		log.Fatal(err)
	}
	srv := &engine.Server{Handler: pipe.Handler(pipe.Chain{site})}
	defer srv.Shutdown(context.Background())
	log.Fatal(srv.Serve(ln))
}
