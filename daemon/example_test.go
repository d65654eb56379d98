package daemon_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/engine"
)

// get returns the body of a GET of url. An Example has no testing.TB, so
// it cannot use sluicetest.Get.
func get(url string) string {
	resp, err := http.Get(url)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// site writes a config file whose one route answers body, in dir.
func site(dir, body string) string {
	file := filepath.Join(dir, "site.yaml")
	yaml := fmt.Sprintf("listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline:\n      - text: %q\n", body)
	if err := os.WriteFile(file, []byte(yaml), 0o644); err != nil {
		panic(err)
	}
	return file
}

// A server that serves a config file, loads it again after it changed,
// and shuts down.
func Example() {
	dir, _ := os.MkdirTemp("", "sluice-example")
	defer os.RemoveAll(dir)
	file := site(dir, "version 1\n")

	srv := &daemon.Server{
		Load: func(ctx components.Context) (*config.Config, error) {
			return (&config.Loader{Context: ctx}).Load(file)
		},
		Name:   file,
		Stderr: io.Discard, // the config's log: output stderr (the default)
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	url := "http://" + srv.Addrs()[0].String() + "/"
	fmt.Print(get(url))

	site(dir, "version 2\n")
	if err := srv.Reload(); err != nil { // requests in flight finish on version 1
		log.Fatal(err)
	}
	fmt.Print(get(url))

	if err := srv.Shutdown(context.Background()); err != nil {
		log.Fatal(err)
	}
	// Output:
	// version 1
	// version 2
}

// A program that runs a config until SIGINT or SIGTERM, reloading it on
// SIGHUP and reopening its log files on SIGUSR1, as sluice serve -c does.
func ExampleHandleSignals() {
	srv := &daemon.Server{
		Load: func(ctx components.Context) (*config.Config, error) {
			return (&config.Loader{Context: ctx}).Load("site.yaml")
		},
		Name:           "site.yaml",
		SetSlogDefault: true,
	}
	ctx, stop := daemon.HandleSignals(context.Background(), srv)
	defer stop()
	if err := srv.Run(ctx); err != nil { // returns after SIGINT or SIGTERM
		slog.Error("cannot serve", "error", err)
		os.Exit(1)
	}
}

// Listening sockets opened elsewhere — inherited from a parent process,
// or bound before dropping privileges — are handed to the server by
// Listen, which it asks for every address of the config.
func ExampleServer_Listen() {
	dir, _ := os.MkdirTemp("", "sluice-example")
	defer os.RemoveAll(dir)
	file := site(dir, "served on an inherited socket\n")

	inherited, err := net.Listen("tcp", "127.0.0.1:0") // opened before
	if err != nil {
		log.Fatal(err)
	}
	srv := &daemon.Server{
		Load: func(ctx components.Context) (*config.Config, error) {
			return (&config.Loader{Context: ctx}).Load(file)
		},
		Listen: func(a config.Address) (net.Listener, error) {
			if a.String() == "127.0.0.1:0" {
				return inherited, nil
			}
			return daemon.Listen(a)
		},
		Stderr: io.Discard,
	}
	if err := srv.Start(); err != nil {
		log.Fatal(err)
	}
	defer srv.Shutdown(context.Background())
	fmt.Print(get("http://" + inherited.Addr().String() + "/"))
	// Output:
	// served on an inherited socket
}

// A Switch on its own: an engine.Server serving one config, then
// another, without stopping.
func ExampleSwitch() {
	dir, _ := os.MkdirTemp("", "sluice-example")
	defer os.RemoveAll(dir)
	one, err := config.Load(site(dir, "one\n"))
	if err != nil {
		log.Fatal(err)
	}
	sw := daemon.NewSwitch(one)
	srv := &engine.Server{Handler: sw}
	ln, err := engine.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(ln)
	url := "http://" + ln.Addr().String() + "/"
	fmt.Print(get(url))

	two, err := config.Load(site(dir, "two\n"))
	if err != nil {
		log.Fatal(err)
	}
	sw.Swap(two) // one is closed once its requests in flight are done
	fmt.Print(get(url))

	srv.Shutdown(context.Background())
	sw.Close() // after the server has stopped
	// Output:
	// one
	// two
}
