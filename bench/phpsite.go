package bench

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// The php scenario's pool and site.
const (
	// phpChildren is the php-fpm pool's size: pm = static, the same
	// children for every server in front of it.
	phpChildren = 4

	// phpPosts is how many posts the harness publishes after
	// WordPress's installer made its own, so that the front page lists
	// WordPress's ten latest.
	phpPosts = 12

	// phpStartTimeout bounds the start of php-fpm and MariaDB (MariaDB
	// creates its system tables first): a bound on a hung start, not a
	// figure anything is judged by.
	phpStartTimeout = 2 * time.Minute
)

// Paths of the php scenario's site.
const (
	pathHelloPHP = "/hello.php" // a few bytes from PHP, no database
	pathWPFront  = "/"          // WordPress's front page: index.php, the ten latest posts
)

// helloPHP is hello.php, the scenario's smallest PHP page.
const helloPHP = "<?php\necho \"Hello, world\\n\";\n"

// helloBody is what hello.php answers.
const helloBody = "Hello, world\n"

// opcachePHP is a script that says whether OPcache caches the pool's
// scripts, which the harness asks once and reports.
const opcachePHP = "<?php\n$s = function_exists('opcache_get_status') ? opcache_get_status(false) : false;\necho is_array($s) && !empty($s['opcache_enabled']) ? 'on' : 'off';\n"

// pathOpcache is where opcachePHP is served.
const pathOpcache = "/sluicebench-opcache.php"

// findFPM returns the php-fpm program: php-fpm on the PATH, else
// Debian's versioned name (php-fpm8.2) on the PATH or in /usr/sbin, the
// newest first; "" if there is none.
func findFPM() string {
	if p, err := exec.LookPath("php-fpm"); err == nil {
		return p
	}
	var found []string
	for _, dir := range append(filepath.SplitList(os.Getenv("PATH")), "/usr/sbin") {
		m, _ := filepath.Glob(filepath.Join(dir, "php-fpm[0-9]*"))
		found = append(found, m...)
	}
	best := ""
	for _, p := range found {
		if fi, err := os.Stat(p); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		if best == "" || phpVersionLess(filepath.Base(best), filepath.Base(p)) {
			best = p
		}
	}
	return best
}

// phpVersionLess orders php-fpm8.2 before php-fpm8.10.
func phpVersionLess(a, b string) bool {
	va := strings.Split(strings.TrimPrefix(a, "php-fpm"), ".")
	vb := strings.Split(strings.TrimPrefix(b, "php-fpm"), ".")
	for i := 0; i < len(va) && i < len(vb); i++ {
		x, _ := strconv.Atoi(va[i])
		y, _ := strconv.Atoi(vb[i])
		if x != y {
			return x < y
		}
	}
	return len(va) < len(vb)
}

// daemon is a program the php scenario runs beside the servers (php-fpm,
// MariaDB), in a process group of its own, its output in a log file.
type daemon struct {
	name string
	prog string // the program run (argv[0])
	cmd  *exec.Cmd
	log  string
	done chan struct{} // closed once the process has been waited for
}

// startDaemon starts argv under "taskset -c cpus" as the user cred (nil:
// this process's), its output in dir/NAME.log, and waits until ready
// holds (at most phpStartTimeout); it stops the daemon if not.
func startDaemon(name, dir, cpus string, cred *syscall.Credential, ready func(log string) bool, argv ...string) (*daemon, error) {
	d := &daemon{name: name, prog: argv[0], log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	out, err := os.Create(d.log)
	if err != nil {
		return nil, err
	}
	defer out.Close()
	d.cmd = exec.Command("taskset", append([]string{"-c", cpus}, argv...)...)
	d.cmd.Dir = dir
	d.cmd.Stdout, d.cmd.Stderr = out, out
	d.cmd.Env = append(os.Environ(), "LC_ALL=C")
	d.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	if err := d.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	go func() { d.cmd.Wait(); close(d.done) }()
	deadline := time.Now().Add(phpStartTimeout)
	for !ready(d.readLog()) {
		select {
		case <-d.done:
			return nil, fmt.Errorf("%s exited at start: %s", name, d.tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			d.stop()
			return nil, fmt.Errorf("%s did not start within %s: %s", name, phpStartTimeout, d.tail())
		}
	}
	return d, nil
}

func (d *daemon) readLog() string {
	b, _ := os.ReadFile(d.log)
	return string(b)
}

// tail returns the end of the daemon's log.
func (d *daemon) tail() string {
	s := strings.TrimSpace(d.readLog())
	if len(s) > 800 {
		s = s[len(s)-800:]
	}
	return s
}

// alive reports whether the daemon is still running.
func (d *daemon) alive() bool {
	select {
	case <-d.done:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM to the daemon's process group, SIGKILL if it has not
// exited 10 s later, and waits for it; then kills any straggler of the
// group (php-fpm's children).
func (d *daemon) stop() {
	if d == nil {
		return
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-d.done:
	case <-time.After(10 * time.Second):
		syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
		<-d.done
	}
	syscall.Kill(-d.cmd.Process.Pid, syscall.SIGKILL)
}

// pid is the daemon's process (taskset execs it).
func (d *daemon) pid() int { return d.cmd.Process.Pid }

// fpmPool is a private php-fpm: one static pool on a Unix socket.
type fpmPool struct {
	*daemon
	Sock string
	Conf string // the configuration written, for the report
	Argv []string
}

// fpmConf is php-fpm's configuration for the scenario: no daemon, one
// pool of children static children on sock, readable by nginx's worker
// (which runs as nobody when nginx starts as root), no access log, no
// slow log, children never recycled.
func fpmConf(dir, sock string, children int) string {
	return fmt.Sprintf(`; php-fpm for the php scenario: one static pool of %[3]d children on a Unix
; socket, every server in front of the same pool. OPcache is on (-d
; opcache.enable=1 on the command line, Debian's default for php-fpm).
; No access log, no slow log, children never recycled.
[global]
pid = %[1]s/php-fpm.pid
error_log = %[1]s/php-fpm-error.log
daemonize = no

[bench]
listen = %[2]s
listen.mode = 0666
listen.backlog = 4096
pm = static
pm.max_children = %[3]d
pm.max_requests = 0
catch_workers_output = yes
`, dir, sock, children)
}

// startFPM starts php-fpm with a pool of children on a socket in dir,
// pinned to cpus. As root it runs as root (-R): its children read the
// site, which root owns, and a benchmark's pool has nothing to protect.
func startFPM(bin, dir, cpus string, children int) (*fpmPool, error) {
	sock := filepath.Join(dir, "php-fpm.sock")
	conf := filepath.Join(dir, "php-fpm.conf")
	text := fpmConf(dir, sock, children)
	if err := os.WriteFile(conf, []byte(text), 0o644); err != nil {
		return nil, err
	}
	argv := []string{bin, "--nodaemonize", "--fpm-config", conf, "-d", "opcache.enable=1"}
	if os.Geteuid() == 0 {
		argv = append(argv, "--allow-to-run-as-root")
	}
	d, err := startDaemon("php-fpm", dir, cpus, nil, func(string) bool {
		_, err := os.Stat(sock)
		return err == nil
	}, argv...)
	if err != nil {
		if b, _ := os.ReadFile(filepath.Join(dir, "php-fpm-error.log")); len(b) > 0 {
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(b)))
		}
		return nil, err
	}
	return &fpmPool{daemon: d, Sock: sock, Conf: text, Argv: argv}, nil
}

// lookProgram returns the path of name on the PATH or at fallback.
func lookProgram(name, fallback string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	if _, err := os.Stat(fallback); err == nil {
		return fallback, nil
	}
	return "", fmt.Errorf("%s is not installed", name)
}

// startMariaDB starts a private MariaDB in dir (as sqldata/sqltest does
// for the tests: its own data directory, a Unix socket, no network, no
// durability), pinned to cpus, with an empty database wordpress; it
// returns the daemon and its socket.
func startMariaDB(dir, cpus string) (*daemon, string, error) {
	server, err := lookProgram("mariadbd", "/usr/sbin/mariadbd")
	if err != nil {
		return nil, "", err
	}
	install, err := lookProgram("mariadb-install-db", "/usr/bin/mariadb-install-db")
	if err != nil {
		return nil, "", err
	}
	cred, err := unprivileged("MariaDB")
	if err != nil {
		return nil, "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, "", err
		}
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(install, "--no-defaults", "--datadir="+data,
		"--auth-root-authentication-method=normal", "--skip-test-db", "--skip-name-resolve")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Credential: cred}
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, "", fmt.Errorf("mariadb-install-db: %v: %s", err, lastLines(string(out), 5))
	}
	initFile := filepath.Join(dir, "init.sql")
	if err := os.WriteFile(initFile, []byte("CREATE DATABASE IF NOT EXISTS wordpress;\n"), 0o644); err != nil {
		return nil, "", err
	}
	sock := filepath.Join(dir, "mysqld.sock")
	d, err := startDaemon("mariadb", dir, cpus, cred, func(log string) bool { return strings.Contains(log, "ready for connections") },
		server, "--no-defaults", "--datadir="+data, "--socket="+sock,
		"--pid-file="+filepath.Join(dir, "mysqld.pid"), "--skip-networking",
		"--skip-name-resolve", "--init-file="+initFile, "--innodb-buffer-pool-size=64M",
		"--innodb-flush-log-at-trx-commit=0", "--skip-log-bin", "--max-connections=100")
	if err != nil {
		return nil, "", err
	}
	return d, sock, nil
}

// wpConfig is the site's wp-config.php: the private MariaDB over its
// socket, and the site's address taken from the request's Host, so that
// one installation answers every server of the run on its own port
// without redirecting to another (WordPress otherwise redirects to the
// address it was installed at).
func wpConfig(dbSock string) string {
	return `<?php
// wp-config.php of the benchmark's WordPress: a private MariaDB over a
// Unix socket; the site's address is the request's Host.
define('DB_NAME', 'wordpress');
define('DB_USER', 'root');
define('DB_PASSWORD', '');
define('DB_HOST', 'localhost:` + dbSock + `');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
define('AUTH_KEY', 'sluicebench-auth');
define('SECURE_AUTH_KEY', 'sluicebench-secure-auth');
define('LOGGED_IN_KEY', 'sluicebench-logged-in');
define('NONCE_KEY', 'sluicebench-nonce');
define('AUTH_SALT', 'sluicebench-auth-salt');
define('SECURE_AUTH_SALT', 'sluicebench-secure-auth-salt');
define('LOGGED_IN_SALT', 'sluicebench-logged-in-salt');
define('NONCE_SALT', 'sluicebench-nonce-salt');
$table_prefix = 'wp_';
define('WP_DEBUG', false);
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_HTTP_BLOCK_EXTERNAL', true);
if (isset($_SERVER['HTTP_HOST'])) {
	define('WP_HOME', 'http://' . $_SERVER['HTTP_HOST']);
	define('WP_SITEURL', 'http://' . $_SERVER['HTTP_HOST']);
}
if (!defined('ABSPATH')) {
	define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
`
}

// wordPressDir is Debian's WordPress.
const wordPressDir = "/usr/share/wordpress"

// makePHPSite writes the scenario's site into root: a copy of Debian's
// WordPress (symbolic links followed, so that the copy is whole and its
// own) with wp-config.php for the MariaDB at dbSock, hello.php and the
// OPcache probe. With dbSock "", only hello.php, the probe and a minimal
// index.php that echoes the request (for the wiring test).
func makePHPSite(root, dbSock string) error {
	if dbSock != "" {
		if _, err := os.Stat(filepath.Join(wordPressDir, "wp-settings.php")); err != nil {
			return fmt.Errorf("WordPress (Debian package wordpress) is not installed: %w", err)
		}
		if out, err := exec.Command("cp", "-RL", wordPressDir, root).CombinedOutput(); err != nil {
			return fmt.Errorf("copying %s: %v: %s", wordPressDir, err, out)
		}
	} else if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	os.Chmod(root, 0o755)
	files := map[string]string{
		"hello.php":                          helloPHP,
		strings.TrimPrefix(pathOpcache, "/"): opcachePHP,
	}
	if dbSock != "" {
		files["wp-config.php"] = wpConfig(dbSock)
	} else {
		files["index.php"] = "<?php\necho 'index.php: ', $_SERVER['REQUEST_URI'], ' query ', $_SERVER['QUERY_STRING'], \"\\n\";\n"
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(root, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// installWordPress runs WordPress's installer through the server at addr
// as a browser would: the installer's form POSTed to
// /wp-admin/install.php?step=2, which creates the tables, the
// administrator and the first post. It checks that the installer said
// so.
func installWordPress(ctx context.Context, addr string) error {
	form := url.Values{
		"weblog_title":    {"Sluice benchmark"},
		"user_name":       {"admin"},
		"admin_password":  {"sluicebench-admin-password"},
		"admin_password2": {"sluicebench-admin-password"},
		"pw_weak":         {"1"},
		"admin_email":     {"admin@example.com"},
		"blog_public":     {"0"},
		"language":        {""},
		"Submit":          {"Install WordPress"},
	}
	req, err := http.NewRequestWithContext(ctx, "POST", "http://"+addr+"/wp-admin/install.php?step=2", strings.NewReader(form.Encode()))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	c := &http.Client{Timeout: 2 * time.Minute}
	resp, err := c.Do(req)
	if err != nil {
		return fmt.Errorf("WordPress's installer: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("WordPress's installer: %w", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "Success!") {
		return fmt.Errorf("WordPress's installer answered %s without \"Success!\": %s", resp.Status, lastLines(stripTags(string(body)), 5))
	}
	return nil
}

// stripTags drops what lies between < and >, for an HTML page in an
// error message.
func stripTags(s string) string {
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case r == '<':
			in = true
		case r == '>':
			in = false
		case !in:
			b.WriteRune(r)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// wpPostsPHP publishes posts through WordPress's own API
// (wp_insert_post), each a title and a few paragraphs, one minute apart:
// GET it with ?n=N through a server. The harness removes it once used.
const wpPostsPHP = `<?php
// Publishes posts in the benchmark's WordPress: GET this?n=N.
require __DIR__ . '/wp-load.php';
$n = (int)($_GET['n'] ?? 0);
$para = 'Sluice serves this page through php-fpm. Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua. Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.';
for ($i = 1; $i <= $n; $i++) {
	$id = wp_insert_post(array(
		'post_title' => "Benchmark post $i",
		'post_content' => "<!-- wp:paragraph --><p>$para</p><!-- /wp:paragraph -->\n<!-- wp:paragraph --><p>$para</p><!-- /wp:paragraph -->\n<!-- wp:paragraph --><p>$para</p><!-- /wp:paragraph -->",
		'post_status' => 'publish',
		'post_date' => date('Y-m-d H:i:s', time() - 60 * ($n - $i)),
	), true);
	if (is_wp_error($id)) {
		http_response_code(500);
		echo $id->get_error_message(), "\n";
		exit;
	}
}
echo "published $n posts\n";
`

// publishPosts publishes n posts in the WordPress at root through the
// server at addr (php-fpm runs the script), then removes the script.
func publishPosts(ctx context.Context, addr, root string, n int) error {
	const name = "sluicebench-posts.php"
	script := filepath.Join(root, name)
	if err := os.WriteFile(script, []byte(wpPostsPHP), 0o644); err != nil {
		return err
	}
	defer os.Remove(script)
	code, body, err := getPage(ctx, addr, "/"+name+"?n="+strconv.Itoa(n))
	if err != nil {
		return fmt.Errorf("publishing posts: %w", err)
	}
	if want := fmt.Sprintf("published %d posts\n", n); code != http.StatusOK || body != want {
		return fmt.Errorf("publishing posts: %d %s", code, lastLines(stripTags(body), 3))
	}
	return nil
}

// getPage makes one GET of path at addr on a new connection and returns
// the status and body.
func getPage(ctx context.Context, addr, path string) (int, string, error) {
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+addr+path, nil)
	if err != nil {
		return 0, "", err
	}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}
