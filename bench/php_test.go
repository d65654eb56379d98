package bench

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/bench/machine"
	"github.com/sluice-server/sluice/bench/peers"
	"github.com/sluice-server/sluice/bench/report"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/sluicetest"
)

// The php scenario runs only when named, and its peers stand for the
// --servers names sluice, nginx and caddy.
func TestParsePHP(t *testing.T) {
	if slices.Contains(defaultScenarios, report.PHP) {
		t.Errorf("the default scenarios %v include php", defaultScenarios)
	}
	o, code := parse([]string{"--scenarios", "php", "--servers", "sluice,nginx,caddy"}, io.Discard)
	if code != -1 {
		t.Fatalf("parse: exit %d", code)
	}
	if !slices.Equal(o.scenarios, []string{report.PHP}) {
		t.Errorf("scenarios %v", o.scenarios)
	}
	var bases []string
	for _, p := range peers.PHP() {
		bases = append(bases, peers.PHPBase(p.Name))
		if !slices.Contains(serverNames(), peers.PHPBase(p.Name)) {
			t.Errorf("PHP peer %s: its base %q is not a --servers name", p.Name, peers.PHPBase(p.Name))
		}
	}
	if !slices.Equal(bases, []string{"sluice", "nginx", "caddy", "sluice-again"}) {
		t.Errorf("PHP peers stand for %v, want sluice, nginx, caddy, sluice-again", bases)
	}
	// The A/A control runs only when named.
	o, code = parse(nil, io.Discard)
	if code != -1 || slices.Contains(o.servers, "sluice-again") || !slices.Contains(o.servers, "sluice") {
		t.Errorf("default servers %v (exit %d): want sluice and not sluice-again", o.servers, code)
	}
	o, code = parse([]string{"--scenarios", "php", "--servers", "sluice,nginx,sluice-again"}, io.Discard)
	if code != -1 || !slices.Equal(o.servers, []string{"sluice", "nginx", "sluice-again"}) {
		t.Errorf("--servers sluice,nginx,sluice-again: %v (exit %d)", o.servers, code)
	}
}

// The PHP peers' configurations name the root and the pool's socket,
// none turns an access log on, and each is the configuration the
// scenario promises: nginx with an upstream keepalive, fastcgi_keep_conn
// and WordPress's try_files; Caddy with php_fastcgi; Sluice with php.
func TestPHPConfigs(t *testing.T) {
	env := peers.Env{Dir: "/run/x", Root: "/srv/site", Host: "127.0.0.1", Port: 8080, NoFile: 4096, FPM: "/run/php/fpm.sock", IdleConns: 7}
	want := map[string][]string{
		"sluice-php":       {"php:", `root: "/srv/site"`, `"unix:/run/php/fpm.sock"`, "max_conns: 7"},
		"sluice-again-php": {"php:", `root: "/srv/site"`, `"unix:/run/php/fpm.sock"`, "max_conns: 7"},
		"nginx-php":        {"server unix:/run/php/fpm.sock;", "keepalive 7;", "fastcgi_keep_conn on;", "fastcgi_pass php;", "try_files $uri $uri/ /index.php?$args;", "root /srv/site;"},
		"caddy-php":        {"php_fastcgi unix//run/php/fpm.sock", "root * /srv/site", "file_server"},
	}
	for _, p := range peers.PHP() {
		text, err := p.Config(env)
		if err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
		w, ok := want[p.Name]
		if !ok {
			t.Errorf("no expectations for PHP peer %s", p.Name)
		}
		for _, s := range w {
			if !strings.Contains(text, s) {
				t.Errorf("%s: the configuration lacks %q:\n%s", p.Name, s, text)
			}
		}
		for _, line := range strings.Split(text, "\n") {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "#") {
				continue
			}
			if strings.HasPrefix(line, "access_log") && line != "access_log off;" || strings.HasPrefix(line, "log ") || line == "log" {
				t.Errorf("%s logs requests: %q", p.Name, line)
			}
		}
	}
	conf := fpmConf("/run/php", "/run/php/fpm.sock", 3)
	for _, s := range []string{"pm = static", "pm.max_children = 3", "listen = /run/php/fpm.sock", "daemonize = no"} {
		if !strings.Contains(conf, s) {
			t.Errorf("php-fpm's configuration lacks %q:\n%s", s, conf)
		}
	}
}

// needProgram fails the test under CI=1, and skips it elsewhere, when
// path is "" (the program is missing).
func needProgram(t *testing.T, path, name, pkg string) string {
	t.Helper()
	if path != "" {
		return path
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (%s) is not installed; CI must install it (.ci/run)", name, pkg)
	}
	t.Skipf("%s (%s) is not installed", name, pkg)
	return ""
}

// phpTestDir is a temporary directory every user can reach (nginx's
// worker runs as nobody when the tests run as root, and must reach the
// pool's socket and the site), removed by the test's cleanup.
func phpTestDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluicebench-php-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// startTestFPM starts a private php-fpm with two children in dir,
// stopped by the test's cleanup.
func startTestFPM(t *testing.T, dir string) *fpmPool {
	t.Helper()
	bin := needProgram(t, findFPM(), "php-fpm", "Debian package php-fpm")
	pool, err := startFPM(bin, dir, allCPUs(), 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.stop)
	return pool
}

// startPHPPeer starts PHP peer p in front of pool, serving root, and
// returns its address: Sluice's configuration loaded in this process
// (skipped if this tree has no php component), the others' programs
// (skipped, or failed under CI=1, when not installed).
func startPHPPeer(t *testing.T, p peers.Peer, root string, pool *fpmPool) string {
	t.Helper()
	port, err := machine.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	env := peers.Env{Dir: t.TempDir(), Root: root, Host: "127.0.0.1", Port: port, NoFile: machine.RaiseNofile(), FPM: pool.Sock, IdleConns: 2}
	if p.Name == "sluice-php" || p.Name == "sluice-again-php" {
		if _, ok := components.Lookup("php"); !ok {
			t.Skip("this tree has no php component")
		}
		return startSluiceConfig(t, p, env)
	}
	tools := map[string][2]string{
		"nginx-php": {"nginx", "Debian package nginx"},
		"caddy-php": {"caddy", "Debian package caddy"},
	}
	tool, ok := tools[p.Name]
	if !ok {
		t.Fatalf("no program known for %s", p.Name)
	}
	sluicetest.NeedTool(t, tool[0], tool[1])
	srv, err := peers.Start(p, env, allCPUs())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Stop)
	return env.Addr()
}

// TestPHPPeers starts a private php-fpm and every PHP peer in front of
// it, and checks the wiring the scenario relies on: hello.php answers
// its body from PHP, with OPcache on; a path that names no file runs
// /index.php with the path and query kept (WordPress's front
// controller); a static file is sent as it is, not run; and the pool's
// CPU time, read as the scenario reads it, grows with the requests.
func TestPHPPeers(t *testing.T) {
	dir := phpTestDir(t)
	root := filepath.Join(dir, "site")
	if err := makePHPSite(root, ""); err != nil {
		t.Fatal(err)
	}
	const static = "<?php echo 'this ran'; ?>\n"
	if err := os.WriteFile(filepath.Join(root, "static.txt"), []byte(static), 0o644); err != nil {
		t.Fatal(err)
	}
	pool := startTestFPM(t, dir)
	ctx := context.Background()
	for _, p := range peers.PHP() {
		t.Run(p.Name, func(t *testing.T) {
			addr := startPHPPeer(t, p, root, pool)
			before, err := peers.TreeRuntime(pool.pid())
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range []struct{ path, want string }{
				{pathHelloPHP, helloBody},
				{pathOpcache, "on"},
				{"/pretty/path/?x=1&y=2", "index.php: /pretty/path/?x=1&y=2 query x=1&y=2\n"},
				{"/static.txt", static},
			} {
				code, body, err := getPage(ctx, addr, c.path)
				if err != nil {
					t.Fatalf("GET %s: %v", c.path, err)
				}
				if code != 200 || body != c.want {
					t.Errorf("GET %s: %d %q; want 200 %q", c.path, code, body, c.want)
				}
			}
			after, err := peers.TreeRuntime(pool.pid())
			if err != nil {
				t.Fatal(err)
			}
			if after <= before {
				t.Errorf("php-fpm's run time went from %v to %v over three PHP requests", before, after)
			}
		})
	}
}

// TestPHPWordPress sets up the scenario's WordPress as the harness does
// (a private MariaDB, Debian's WordPress copied with its own
// wp-config.php, php-fpm), installs it through the installer's form
// behind nginx-php (or caddy-php where nginx is missing), publishes the
// posts, and checks the pages the scenario measures.
func TestPHPWordPress(t *testing.T) {
	if testing.Short() {
		t.Skip("installs WordPress in a private MariaDB: not with -short")
	}
	if _, err := os.Stat(filepath.Join(wordPressDir, "wp-settings.php")); err != nil {
		needProgram(t, "", "WordPress", "Debian package wordpress")
	}
	needProgram(t, func() string { p, _ := lookProgram("mariadbd", "/usr/sbin/mariadbd"); return p }(), "mariadbd", "Debian package mariadb-server")
	dir := phpTestDir(t)
	db, sock, err := startMariaDB(filepath.Join(dir, "mariadb"), allCPUs())
	if db != nil {
		t.Cleanup(db.stop)
	}
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "site")
	if err := makePHPSite(root, sock); err != nil {
		t.Fatal(err)
	}
	pool := startTestFPM(t, dir)
	name := "nginx-php"
	if sluicetest.HaveTool(t, "nginx", "Debian package nginx") == "" {
		name = "caddy-php"
	}
	i := slices.IndexFunc(peers.PHP(), func(p peers.Peer) bool { return p.Name == name })
	front := peers.PHP()[i]
	addr := startPHPPeer(t, front, root, pool)
	ctx := context.Background()
	if err := installWordPress(ctx, addr); err != nil {
		t.Fatal(err)
	}
	if err := publishPosts(ctx, addr, root, phpPosts); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "sluicebench-posts.php")); !os.IsNotExist(err) {
		t.Errorf("the posts script is still in the site: %v", err)
	}
	if err := checkPHPPages(ctx, addr); err != nil {
		t.Fatal(err)
	}
	// A second installation is refused: the site is installed.
	if err := installWordPress(ctx, addr); err == nil {
		t.Error("installing WordPress a second time succeeded")
	}
}
