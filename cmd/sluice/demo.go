package main

import (
	"flag"
	"io"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/demo"
	"github.com/sluice-server/sluice/pipe"
)

var demoCommand = command{
	name:     "demo",
	synopsis: "sluice demo [--listen ADDR]\n\nServes the demo site built into the binary until SIGINT or SIGTERM.",
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		listen := fs.String("listen", ":8080", "the TCP address to listen on, host:port")
		return func(stdout, stderr io.Writer) int {
			log := newLogger(stderr)
			d := &daemon.Server{
				Load: func(components.Context) (*config.Config, error) {
					return demoConfig(config.Address{Network: "tcp", Addr: *listen})
				},
				Name:           "demo",
				Attrs:          []any{"site", "demo"},
				Stdout:         stdout,
				Stderr:         stderr,
				Logger:         log,
				SetSlogDefault: true,
			}
			return runDaemon(d, log, stderr)
		}
	},
}

// demoConfig is the config of the demo site: one route, the files of the
// embedded site, with the defaults of a config file.
func demoConfig(listen config.Address) (*config.Config, error) {
	site, err := components.NewFiles(components.FilesOptions{FS: demo.FS()})
	if err != nil {
		return nil, err
	}
	rt, err := pipe.NewRouter(pipe.Route{Match: []string{"/"}, Pipeline: site})
	if err != nil {
		return nil, err
	}
	reg, _ := components.Lookup("files")
	return &config.Config{
		File:         "(demo)",
		Listen:       []config.Address{listen},
		Workers:      1,
		ServerHeader: config.DefaultServerHeader,
		Routes: []*config.Route{{
			Match:  []string{"/"},
			Stages: []*config.Stage{{Name: "files", Registration: reg, Component: site}},
		}},
		Router: rt,
	}, nil
}
