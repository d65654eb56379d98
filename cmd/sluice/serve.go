package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/demo"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/files"
)

// shutdownGrace is how long requests in flight get to finish after
// SIGINT or SIGTERM.
const shutdownGrace = 10 * time.Second

var serveCommand = command{
	name:     "serve",
	synopsis: "sluice serve [--root DIR] [--listen ADDR] [--server-header NAME]\n\nServes the files under DIR over HTTP/1.1 until SIGINT or SIGTERM.",
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		root := fs.String("root", ".", "the directory to serve")
		listen := fs.String("listen", ":8080", "the TCP address to listen on, host:port")
		server := fs.String("server-header", "sluice", "the Server header field value; empty sends none")
		return func(_, stderr io.Writer) int {
			log := newLogger(stderr)
			h, err := files.New(*root, files.Options{})
			if err != nil {
				log.Error("cannot serve root", "root", *root, "error", err)
				return exitError
			}
			defer h.Close()
			return listenAndServe(log, &engine.Server{Handler: h, ServerHeader: *server}, *listen, "root", *root)
		}
	},
}

var demoCommand = command{
	name:     "demo",
	synopsis: "sluice demo [--listen ADDR]\n\nServes the demo site built into the binary until SIGINT or SIGTERM.",
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		listen := fs.String("listen", ":8080", "the TCP address to listen on, host:port")
		return func(_, stderr io.Writer) int {
			log := newLogger(stderr)
			h := files.NewFS(demo.FS(), files.Options{})
			return listenAndServe(log, &engine.Server{Handler: h, ServerHeader: "sluice"}, *listen, "site", "demo")
		}
	},
}

// newLogger returns a text logger to w and makes it the default, so
// packages logging through slog reach it too.
func newLogger(w io.Writer) *slog.Logger {
	log := slog.New(slog.NewTextHandler(w, nil))
	slog.SetDefault(log)
	return log
}

// listenAndServe serves srv on addr until SIGINT or SIGTERM, then shuts
// it down gracefully within shutdownGrace. It returns the exit status.
func listenAndServe(log *slog.Logger, srv *engine.Server, addr string, attrs ...any) int {
	srv.Logger = log
	ln, err := engine.Listen("tcp", addr)
	if err != nil {
		log.Error("cannot listen", "addr", addr, "error", err)
		return exitError
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	log.Info("listening", append([]any{"addr", ln.Addr().String()}, attrs...)...)

	select {
	case err := <-done:
		log.Error("server failed", "error", err)
		return exitError
	case <-ctx.Done():
	}
	stop() // a second signal kills the process the default way
	log.Info("shutting down", "grace", shutdownGrace)
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Error("shutdown incomplete", "error", err)
		return exitError
	}
	if err := <-done; err != nil && !errors.Is(err, engine.ErrServerClosed) {
		log.Error("server failed", "error", err)
		return exitError
	}
	log.Info("stopped")
	return exitOK
}
