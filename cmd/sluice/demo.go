package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/demo"
)

var demoCommand = command{
	name: "demo",
	synopsis: `sluice demo [--listen ADDR] [--data DIR]

Serves the demo site built into the binary until SIGINT or SIGTERM. It
writes the site into the data directory DIR (by default sluice/demo in
the user's cache directory): its config file, sluice.yaml, and the
folders that file serves, replacing the files that differ from the
binary's and keeping the rest. The first run with a directory also makes
the password of the site's private area and its database, articles.db
(SQLite, 10,000 rows). Then it serves DIR/sluice.yaml as 'sluice serve
-c DIR/sluice.yaml' does, --listen overriding the file's listen, and
prints where the site is, its address, and the user and password of the
private area. The file listens on 127.0.0.1:8080, which only this
machine reaches; --listen :8080 serves every interface.`,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		listen := fs.String("listen", "", "the `ADDR`ess to listen on: host:port, :port or unix:/path (default: the config file's, 127.0.0.1:8080; :8080 for every interface)")
		data := fs.String("data", "", "the data `DIR`ectory the site is written to and served from (default: sluice/demo in the user's cache directory)")
		return func(stdout, stderr io.Writer) int {
			dir, err := demoDir(*data)
			if err == nil {
				err = prepareDemo(dir, *listen, stdout)
			}
			if err != nil {
				fmt.Fprintf(stderr, "sluice demo: %v\n", err)
				return exitError
			}
			f := &serveFlags{file: filepath.Join(dir, demo.ConfigFile), listen: *listen, grace: daemon.DefaultGrace,
				workers: "0", set: map[string]bool{"listen": *listen != ""}, demo: true}
			return f.run(stdout, stderr)
		}
	},
}

// demoDir returns the data directory of sluice demo: dir, or sluice/demo
// in the user's cache directory.
func demoDir(dir string) (string, error) {
	if dir == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no cache directory for the site (%v): give one with --data DIR", err)
		}
		dir = filepath.Join(cache, "sluice", "demo")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	return filepath.Abs(dir)
}

// prepareDemo writes the demo site and its password into dir and prints
// where the site is, the address it will be served at (listen, or the
// config file's) and the user and password of its private area.
func prepareDemo(dir, listen string, stdout io.Writer) error {
	if _, err := demo.Write(dir); err != nil {
		return fmt.Errorf("writing the site: %w", err)
	}
	password, err := demo.Credentials(dir)
	if err != nil {
		return fmt.Errorf("making the password: %w", err)
	}
	created, err := createArticles(dir)
	if err != nil {
		return fmt.Errorf("creating the articles: %w", err)
	}
	fmt.Fprintf(stdout, "Sluice demo\n  site:     %s\n", filepath.Join(dir, demo.ConfigFile))
	if created {
		fmt.Fprintf(stdout, "  data:     %s, %d articles, made now\n", filepath.Join(dir, demo.ArticlesFile), demo.ArticleCount)
	}
	if u := demoURL(dir, listen); u != "" {
		fmt.Fprintf(stdout, "  open:     %s\n", u)
	}
	fmt.Fprintf(stdout, "  private:  user %s, password %s\n", demo.User, password)
	return nil
}

// createArticles creates the demo's SQLite database of articles in dir,
// unless it is there, and reports whether it did. The sqlite driver is
// the one the binary links for the databases of config files.
func createArticles(dir string) (bool, error) {
	db, err := sql.Open("sqlite", filepath.Join(dir, demo.ArticlesFile))
	if err != nil {
		return false, err
	}
	defer db.Close()
	return demo.CreateArticles(context.Background(), db)
}

// demoURL returns the URL the site will answer at: on listen, or on the
// first address of the config file in dir. It returns "" when the port is
// chosen when listening (":0"), which the listening log record then says.
func demoURL(dir, listen string) string {
	if listen == "" {
		var top struct {
			Listen yaml.Node `yaml:"listen"`
		}
		data, _ := os.ReadFile(filepath.Join(dir, demo.ConfigFile))
		if yaml.Unmarshal(data, &top) != nil {
			return ""
		}
		listen = top.Listen.Value
		if top.Listen.Kind == yaml.SequenceNode && len(top.Listen.Content) > 0 {
			listen = top.Listen.Content[0].Value
		}
	}
	a, err := config.ParseAddress(listen)
	if err != nil {
		return ""
	}
	if a.Network == "unix" {
		return a.String()
	}
	host, port, err := net.SplitHostPort(a.Addr)
	if err != nil || port == "0" {
		return ""
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}
