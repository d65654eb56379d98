package fastcgi_test

import (
	"log"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/fastcgi"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// A PHP site: the scripts under /srv/www run by the local PHP-FPM pool
// of 8 children, uploads never executed.
func ExampleNew() {
	cl, err := fastcgi.New(fastcgi.Options{
		Options: upstream.Options{
			Upstreams: []string{"unix:/run/php/php8.2-fpm.sock"},
			MaxConns:  8, // the pool's pm.max_children
			Health:    upstream.Health{Path: "/fpm-ping"},
		},
		Root:   "/srv/www",
		NoExec: []string{"/uploads/"},
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	srv := &engine.Server{Handler: pipe.Handler(cl)}
	ln, err := engine.Listen("tcp", ":8080")
	if err != nil {
		log.Fatal(err)
	}
	log.Fatal(srv.Serve(ln))
}

// A front controller: every request runs index.php, whose SCRIPT_NAME is
// /index.php and REQUEST_URI the request's, as Laravel or Symfony expect.
func ExampleClient_Handle() {
	cl, err := fastcgi.New(fastcgi.Options{
		Options: upstream.Options{Upstreams: []string{"127.0.0.1:9000"}, MaxConns: 16},
		Root:    "/srv/app/public",
		Script:  "index.php",
	})
	if err != nil {
		log.Fatal(err)
	}
	defer cl.Close()
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/"}, Pipeline: cl})
	if err != nil {
		log.Fatal(err)
	}
	_ = pipe.Handler(rt)
}
