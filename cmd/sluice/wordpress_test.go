package main_test

// TestWordPress runs Debian's WordPress on Sluice, for real: a private
// MariaDB, a private PHP-FPM (its workers run as nobody when the test
// runs as root, as www-data would) and the sluice binary serving the
// site from a config file through its php component (docs/php.md's
// WordPress config), driven in headless Chromium as a person would
// drive it. What it proves, step by step:
//
//   - the web installer runs (the front page of a new site redirects to
//     install.php; its form's POST; "Success!"), and the site's title
//     and admin user are in the database;
//   - an admin logs in (wp-login.php's POST and cookies, the redirect to
//     /wp-admin/, the dashboard);
//   - Settings → Permalinks → "Post name" is /index.php/%postname%/ on a
//     server WordPress does not know (it knows Apache, nginx and IIS),
//     and the post is shown at /index.php/SLUG/: PATH_INFO reaches PHP;
//     a custom structure /%postname%/ is saved as typed, and the post is
//     shown at /SLUG/, which no file answers: the front controller does;
//   - a post is published in the block editor, which loads (dozens of
//     scripts and stylesheets, static files and load-scripts.php) and
//     saves through the REST API (POST /wp-json/..., the front
//     controller again, JSON both ways). The editor is driven through
//     its data API (wp.data's core/editor store: editPost, then savePost,
//     what its Publish button calls), not by clicking through its
//     panels: the clicks would test Gutenberg's markup of the day, and
//     the API saves through the same requests;
//   - the front controller keeps the query (a REST search finds the
//     post, or nothing) and the request's URI as sent (a post published
//     over the REST API with a Cyrillic title has a percent-encoded slug,
//     found in lowercase and uppercase hex); the plain (?p=ID) and the
//     old PATH_INFO permalinks redirect to the pretty one; HEAD of a page
//     has no body and the connection goes on; the feed's ETag brings
//     WordPress's 304 (a CGI Status: 304) with no body; /wp-admin
//     redirects to /wp-admin/, whose index.php runs; xmlrpc.php runs; an
//     unknown slug is WordPress's 404 page; wp-config.php runs and its
//     source is never sent;
//   - an image is uploaded through the media library's uploader
//     (media-new.php, a multipart POST of several FastCGI records to
//     async-upload.php), and fetched back as a static file byte for byte
//     with its Content-Type, a range of it (206) and the smaller sizes
//     PHP's GD made; a .php file in the uploads (marked no_exec) does
//     not run, 403 however the path goes on, while the same file
//     elsewhere does;
//   - a logged-out visitor comments (wp-comments-post.php, the redirect
//     back, "awaiting moderation"), the admin approves it, and the
//     visitor sees it;
//   - the pages a visitor sees load every script, stylesheet and image
//     without a console error, the page (PHP's output) and some of what
//     it loads (files') decoded from compress's Content-Encoding;
//   - WP-Cron runs: a page load has PHP post to /wp-cron.php on the site
//     and hang up after 10 ms; wp-cron.php (ignore_user_abort,
//     fastcgi_finish_request) runs its task all the same;
//   - sluice logged no warning or error, and exits 0 on SIGTERM.
//
// The steps log the time they end at; the whole test takes 10 s with
// -race on two idle cores, up to 25 s on busy ones.
// Every process (MariaDB, PHP-FPM, sluice, Chromium) is gone when the
// test ends, also when it fails. The programs are Debian's
// mariadb-server, php-fpm, php-mysql, php-gd, wordpress,
// wordpress-theme-twentytwentythree and chromium: a missing one skips
// the test, or fails it when CI is set.

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/sluice-server/sluice/fastcgi/fpmtest"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata/sqltest"
)

// wordpressDir is where Debian's wordpress package installs WordPress.
const wordpressDir = "/usr/share/wordpress"

// wpStepTimeout bounds one step of the browser's (a page to load, a form
// to submit, an upload): a bound on a hung test, not a figure asserted.
const wpStepTimeout = 60 * time.Second

// A wordpress is a copy of WordPress set up for one test.
type wordpress struct {
	root  string  // the site's folder, WordPress's ABSPATH
	db    *sql.DB // its database, as root
	debug string  // WordPress's debug log
	// password is the database user's, in wp-config.php.
	password string
}

func TestWordPress(t *testing.T) {
	began := time.Now()
	lap := func(what string) {
		t.Logf("%6.2fs %s", time.Since(began).Seconds(), what)
	}
	for file, pkg := range map[string]string{
		"wp-settings.php": "wordpress",
		"wp-content/themes/twentytwentythree/theme.json": "wordpress-theme-twentytwentythree",
	} {
		if _, err := os.Stat(filepath.Join(wordpressDir, file)); err != nil {
			if os.Getenv("CI") != "" {
				t.Fatalf("%s (Debian package %s) is not installed; CI must install it (.ci/run)", file, pkg)
			}
			t.Skipf("%s (Debian package %s) is not installed", file, pkg)
		}
	}
	// The other programs are looked for as they start (sqltest, fpmtest,
	// newBrowser); the browser, last to start, is looked for first.
	sluicetest.NeedTool(t, "chromium", "chromium")
	wp := newWordPress(t)
	lap("MariaDB started, WordPress copied")
	base, stop := serveWordPress(t, wp)
	lap("PHP and sluice serving " + base)
	t.Cleanup(func() {
		if t.Failed() {
			if b, err := os.ReadFile(wp.debug); err == nil {
				t.Logf("WordPress's debug log:\n%s", wpTail(b, 4000))
			}
		}
	})
	browser := newBrowser(t)
	lap("chromium started")

	admin, closeAdmin := chromedp.NewContext(browser)
	defer closeAdmin()
	installWordPress(t, admin, base, wp)
	lap("installed through the web installer")
	logIn(t, admin, base)
	lap("logged in to wp-admin")
	// WordPress offers permalinks without /index.php/ only on servers
	// it knows rewrite (Apache, nginx, IIS): on Sluice, "Post name" is
	// /index.php/%postname%/, a PATH_INFO permalink.
	setPermalinks(t, admin, base, wp, `input[name="selection"][value="/index.php/%postname%/"]`, "", "/index.php/%postname%/")
	lap("permalinks set to Post name, /index.php/%postname%/")
	post := publishPost(t, admin, base, wp)
	lap("post published in the block editor")
	unicode := publishUnicodePost(t, admin)
	lap("post with a Cyrillic slug published over the REST API")
	if want := base + "/index.php/hello-from-sluice/"; post.link != want {
		t.Fatalf("the post's permalink is %q, want %q", post.link, want)
	}
	visitPost(t, admin, post)
	lap("post visited at " + post.link)
	// A custom structure is saved as typed: pretty permalinks, which the
	// front controller answers.
	setPermalinks(t, admin, base, wp, "#custom_selection", "/%postname%/", "/%postname%/")
	lap("permalinks set to /%postname%/")
	pathInfoLink := post.link
	post.link = base + "/hello-from-sluice/"
	visitPost(t, admin, post)
	lap("post visited at " + post.link)
	checkFrontController(t, base, post, pathInfoLink, wp)
	checkUnicodePost(t, base, unicode)
	lap("front controller checked")
	uploadImage(t, admin, base, wp)
	lap("image uploaded and fetched back")
	commentAndApprove(t, browser, admin, base, post, wp)
	lap("comment made, approved and seen")
	checkPages(t, browser, base, post)
	lap("pages checked in the browser")
	checkCron(t, wp)
	lap("wp-cron ran")
	stop()
}

// newWordPress starts a private MariaDB, makes WordPress's database and
// user, and copies WordPress into a new folder with its own
// wp-config.php.
func newWordPress(t *testing.T) *wordpress {
	t.Helper()
	dsn := sqltest.MariaDB(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	password := wpRandomHex(t, 12)
	for _, s := range []string{
		"CREATE DATABASE wordpress",
		"CREATE USER 'wordpress'@'localhost' IDENTIFIED BY '" + password + "'",
		"GRANT ALL ON wordpress.* TO 'wordpress'@'localhost'",
	} {
		if _, err := db.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	// The DSN is root@unix(SOCKET)/sluice.
	sock := strings.TrimSuffix(strings.TrimPrefix(dsn, "root@unix("), ")/sluice")
	wp := &wordpress{root: wpDir(t, false), db: db, password: password}
	// WordPress's debug log is outside the site: under it, it would be
	// served to anyone as a static file.
	wp.debug = filepath.Join(wpDir(t, true), "debug.log")
	began := time.Now()
	n := copyWordPress(t, wordpressDir, wp.root)
	t.Logf("copied WordPress: %d files in %v", n, time.Since(began).Round(time.Millisecond))

	keys := ""
	for _, k := range []string{"AUTH_KEY", "SECURE_AUTH_KEY", "LOGGED_IN_KEY", "NONCE_KEY",
		"AUTH_SALT", "SECURE_AUTH_SALT", "LOGGED_IN_SALT", "NONCE_SALT"} {
		keys += fmt.Sprintf("define('%s', '%s');\n", k, wpRandomHex(t, 32))
	}
	writeConfig(t, filepath.Join(wp.root, "wp-config.php"), `<?php
// The test's own config: Debian's reads /etc/wordpress/config-HOST.php.
define('DB_NAME', 'wordpress');
define('DB_USER', 'wordpress');
define('DB_PASSWORD', '`+password+`');
define('DB_HOST', 'localhost:`+sock+`');
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
`+keys+`$table_prefix = 'wp_';
define('FS_METHOD', 'direct');
// No request leaves the machine (update and translation checks); those
// of WordPress's to itself (wp-cron.php) go to sluice.
define('WP_HTTP_BLOCK_EXTERNAL', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_DEBUG', true);
define('WP_DEBUG_DISPLAY', false);
define('WP_DEBUG_LOG', '`+wp.debug+`');
if (!defined('ABSPATH')) {
	define('ABSPATH', __DIR__ . '/');
}
require_once ABSPATH . 'wp-settings.php';
`)
	return wp
}

// wpPHPUser is the user PHP-FPM's workers run as, as Debian's www-data
// does, when the test runs as root: nobody. When the test runs as
// another user, the workers run as that user, and ok is false.
func wpPHPUser(t *testing.T) (u *user.User, group string, ok bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		return nil, "", false
	}
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatalf("the test runs as root and there is no user nobody to run PHP as: %v", err)
	}
	g, err := user.LookupGroupId(u.Gid)
	if err != nil {
		t.Fatal(err)
	}
	return u, g.Name, true
}

// wpDir makes a folder PHP's workers can reach (t.TempDir's parent is
// private to the test's user), and write to when writable is true,
// removed when the test ends.
func wpDir(t *testing.T, writable bool) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "sluice-wp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if writable {
		wpGiveToPHP(t, dir)
	}
	return dir
}

// wpGiveToPHP makes path PHP's workers' own.
func wpGiveToPHP(t *testing.T, path string) {
	t.Helper()
	if u, _, ok := wpPHPUser(t); ok {
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(path, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
}

// copyWordPress copies the tree src to dst and returns the number of
// files: folders are made, files hard-linked (in 0.1 s rather than 1.5 s
// for a copy) or copied where a link is refused, and symbolic links
// replaced by what they lead to (Debian links its own copies of scripts
// and libraries out of the tree, and Sluice runs no PHP file outside its
// root). A linked file is root's, and PHP runs as nobody (wpPHPUser):
// WordPress cannot write through the link to Debian's file. A test run
// as another user may not link root's files (fs.protected_hardlinks), and
// copies them. The translations (30 MB) are left out, and Debian's
// wp-config.php and .htaccess. The uploads folder is PHP's.
func copyWordPress(t *testing.T, src, dst string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		switch rel {
		case ".":
			return nil
		case "wp-content/languages":
			return filepath.SkipDir
		case "wp-config.php", ".htaccess":
			return nil
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.Mkdir(to, 0o755)
		}
		from := path
		if d.Type()&fs.ModeSymlink != 0 {
			if from, err = filepath.EvalSymlinks(path); err != nil {
				return err
			}
		}
		n++
		if os.Link(from, to) == nil {
			return nil
		}
		b, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	if err != nil {
		t.Fatalf("copying WordPress: %v", err)
	}
	uploads := filepath.Join(dst, "wp-content", "uploads")
	if err := os.Mkdir(uploads, 0o755); err != nil {
		t.Fatal(err)
	}
	wpGiveToPHP(t, uploads)
	return n
}

// serveWordPress starts a private PHP-FPM and `sluice serve` serving
// the site through its php component, and returns the base URL,
// http://127.0.0.1:PORT. The config is docs/php.md's for WordPress.
func serveWordPress(t *testing.T, wp *wordpress) (base string, stop func()) {
	t.Helper()
	opts := fpmtest.Options{
		Children:   4,
		Extensions: []string{"gd"}, // the smaller sizes of an uploaded image
		INI: map[string]string{
			"zend_extension": "opcache",
			"opcache.enable": "1",
		},
	}
	if u, group, ok := wpPHPUser(t); ok {
		opts.Pool = map[string]string{"user": u.Username, "group": group}
	}
	fpm := fpmtest.Start(t, opts)
	dir := t.TempDir()
	file := filepath.Join(dir, "sluice.yaml")
	accessLog := filepath.Join(dir, "access.log")
	writeConfig(t, file, fmt.Sprintf(`listen: 127.0.0.1:0
access_log: {file: %q, format: json}
routes:
  - match: /
    pipeline:
      - php:
          root: %q
          upstreams: [%q]
          max_conns: 4
          no_exec: [/wp-content/uploads/]
          static: {max_age: 24h}
      - compress
`, accessLog, wp.root, fpm.Addr()))
	s := start(t, "serve", "-c", file)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("PHP-FPM's log:\n%s", wpTail([]byte(fpm.Log()), 4000))
			t.Logf("sluice's log:\n%s", wpTail([]byte(s.stderr()), 4000))
			b, _ := os.ReadFile(accessLog)
			t.Logf("sluice's access log:\n%s", wpTail(b, 6000))
		}
	})
	stop = func() {
		t.Helper()
		if code := s.stop(t, syscall.SIGTERM); code != 0 {
			t.Errorf("sluice's exit status after SIGTERM = %d, want 0", code)
		}
		// A WordPress session logs no warning or error: no bad response
		// head, no upstream trouble, nothing on PHP's stderr.
		for line := range strings.Lines(s.stderr()) {
			if !strings.Contains(line, "level=INFO") {
				t.Errorf("sluice logged: %s", line)
			}
		}
	}
	return "http://" + s.addr, stop
}

// wpStep returns a context for one step of the browser's in tab, bounded by
// wpStepTimeout.
func wpStep(t *testing.T, tab context.Context) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(tab, wpStepTimeout)
	t.Cleanup(cancel)
	return ctx
}

// wpLoad navigates tab to u and fails the test unless the page answers
// want.
func wpLoad(t *testing.T, tab context.Context, u string, want int) {
	t.Helper()
	resp, err := chromedp.Run(wpStep(t, tab), chromedp.NavigateResponse(u))
	if err != nil {
		t.Fatalf("loading %s: %v", u, err)
	}
	if resp.Status != int64(want) {
		t.Fatalf("%s: status %d, want %d\n%s", u, resp.Status, want, wpPageText(t, tab))
	}
}

// wpSubmit clicks the element sel (a form's button) once it is enabled,
// waits for the page it leads to and fails the test unless it answers
// 200; it returns the page's URL.
func wpSubmit(t *testing.T, tab context.Context, sel chromedp.CSS) string {
	t.Helper()
	if err := chromedp.Do(wpStep(t, tab), chromedp.WaitEnabled(sel)); err != nil {
		t.Fatalf("waiting for %s on %s to be enabled: %v", sel, wpLocation(tab), err)
	}
	resp, err := chromedp.RunResponse(wpStep(t, tab), chromedp.Click(sel, chromedp.NodeVisible))
	if err != nil {
		t.Fatalf("clicking %s on %s: %v", sel, wpLocation(tab), err)
	}
	if resp.Status != 200 {
		t.Fatalf("clicking %s: %s answered %d\n%s", sel, resp.URL, resp.Status, wpPageText(t, tab))
	}
	return resp.URL
}

// wpPoll waits until the JavaScript expression cond is true in the page
// in tab, or fails the test, naming what.
func wpPoll(t *testing.T, tab context.Context, what, cond string) {
	t.Helper()
	if _, err := chromedp.Run(wpStep(t, tab), chromedp.Poll[bool](cond, chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Fatalf("waiting for %s on %s: %v\n%s", what, wpLocation(tab), err, wpPageText(t, tab))
	}
}

// wpFill sets the form fields of the page in tab, by CSS selector.
func wpFill(t *testing.T, tab context.Context, fields map[chromedp.CSS]string) {
	t.Helper()
	for sel, v := range fields {
		if err := chromedp.Do(wpStep(t, tab), chromedp.SetValue(sel, v)); err != nil {
			t.Fatalf("filling %s on %s: %v", sel, wpLocation(tab), err)
		}
	}
}

// wpPageText is the text of the page in tab (a failing step shows it).
func wpPageText(t *testing.T, tab context.Context) string {
	t.Helper()
	s, err := chromedp.Run(wpStep(t, tab), chromedp.Evaluate[string]("document.body ? document.body.innerText : ''"))
	if err != nil {
		return "(no text: " + err.Error() + ")"
	}
	return s
}

// wpLocation is the URL of the page in tab.
func wpLocation(tab context.Context) string {
	ctx, cancel := context.WithTimeout(tab, 5*time.Second)
	defer cancel()
	u, _ := chromedp.Run(ctx, chromedp.Location())
	return u
}

// wpWantText fails the test unless the page in tab shows each of want.
func wpWantText(t *testing.T, tab context.Context, want ...string) {
	t.Helper()
	text := wpPageText(t, tab)
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Fatalf("%s does not show %q:\n%s", wpLocation(tab), w, text)
		}
	}
}

// query runs a query that returns one string, and fails the test if it
// fails.
func (wp *wordpress) query(t *testing.T, q string, args ...any) string {
	t.Helper()
	var s sql.NullString
	if err := wp.db.QueryRow(q, args...).Scan(&s); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return s.String
}

const (
	wpTitle    = "Sluice Test Site"
	wpUser     = "sluiceadmin"
	wpEmail    = "admin@example.com"
	wpPassword = "Sl+uice-5wr!gK9x#Tq2"
)

// installWordPress runs the web installer.
func installWordPress(t *testing.T, tab context.Context, base string, wp *wordpress) {
	t.Helper()
	// The front page of a site not yet installed redirects to the
	// installer.
	wpLoad(t, tab, base+"/", 200)
	if u := wpLocation(tab); !strings.HasSuffix(u, "/wp-admin/install.php") {
		t.Fatalf("the front page of a new site led to %s, want the installer", u)
	}
	// The form's button is disabled while the password is judged weak,
	// which it is until the strength meter's script (zxcvbn, loaded after
	// the page) judges it: the password is typed once it is there.
	wpPoll(t, tab, "the password strength meter", `typeof zxcvbn === 'function'`)
	wpFill(t, tab, map[chromedp.CSS]string{
		"#weblog_title": wpTitle,
		"#user_login":   wpUser,
		"#pass1":        wpPassword, // its script copies it to #pass2
		"#admin_email":  wpEmail,
	})
	wpPoll(t, tab, "the password to be judged strong", `document.querySelector('#pass-strength-result').classList.contains('strong')`)
	wpSubmit(t, tab, "#submit")
	wpWantText(t, tab, "Success!", wpUser)
	if got := wp.query(t, "SELECT option_value FROM wordpress.wp_options WHERE option_name = 'blogname'"); got != wpTitle {
		t.Errorf("blogname in the database = %q, want %q", got, wpTitle)
	}
	if got := wp.query(t, "SELECT user_email FROM wordpress.wp_users WHERE user_login = ?", wpUser); got != wpEmail {
		t.Errorf("the admin's email in the database = %q, want %q", got, wpEmail)
	}
	// The avatars are Gravatar's, which this machine may not reach: a
	// page that shows them would fail the browser's checks.
	if _, err := wp.db.Exec("UPDATE wordpress.wp_options SET option_value = '0' WHERE option_name = 'show_avatars'"); err != nil {
		t.Fatal(err)
	}
}

// logIn logs the admin in.
func logIn(t *testing.T, tab context.Context, base string) {
	t.Helper()
	wpLoad(t, tab, base+"/wp-login.php", 200)
	wpFill(t, tab, map[chromedp.CSS]string{"#user_login": wpUser, "#user_pass": wpPassword})
	if u := wpSubmit(t, tab, "#wp-submit"); u != base+"/wp-admin/" {
		t.Fatalf("logging in led to %s, want %s/wp-admin/\n%s", u, base, wpPageText(t, tab))
	}
	wpWantText(t, tab, "Dashboard", "Howdy, "+wpUser)
}

// setPermalinks saves a permalink structure on Settings → Permalinks:
// the choice clicked, with the custom structure typed when not "", must
// save want.
func setPermalinks(t *testing.T, tab context.Context, base string, wp *wordpress, choice chromedp.CSS, custom, want string) {
	t.Helper()
	wpLoad(t, tab, base+"/wp-admin/options-permalink.php", 200)
	if err := chromedp.Do(wpStep(t, tab), chromedp.Click(choice, chromedp.NodeVisible)); err != nil {
		t.Fatalf("choosing %s: %v\n%s", choice, err, wpPageText(t, tab))
	}
	if custom != "" {
		wpFill(t, tab, map[chromedp.CSS]string{"#permalink_structure": custom})
	}
	wpSubmit(t, tab, "#submit")
	// For a structure without /index.php/, WordPress asks for a
	// .htaccess it cannot write (it knows no rewriting server but Apache
	// and nginx); Sluice needs none.
	if text := wpPageText(t, tab); !strings.Contains(text, "Permalink structure updated.") && !strings.Contains(text, "You should update your .htaccess file now.") {
		t.Fatalf("saving the permalinks: no notice that they are saved:\n%s", text)
	}
	if got := wp.query(t, "SELECT option_value FROM wordpress.wp_options WHERE option_name = 'permalink_structure'"); got != want {
		t.Fatalf("permalink_structure = %q, want %q", got, want)
	}
}

// A wpPost is a published post.
type wpPost struct {
	ID          int
	Title, Body string // as typed in the editor
	link        string // its permalink
}

// publishPost publishes a post in the block editor, through its data
// API (see the file's comment).
func publishPost(t *testing.T, tab context.Context, base string, wp *wordpress) *wpPost {
	t.Helper()
	wpLoad(t, tab, base+"/wp-admin/post-new.php", 200)
	ready := `!!(window.wp && wp.data && wp.data.select('core/editor') && wp.data.select('core/editor').getCurrentPostId() > 0)`
	wpPoll(t, tab, "the block editor", ready)
	post := &wpPost{Title: "Hello from Sluice", Body: "Served by PHP-FPM behind Sluice, " + wpRandomHex(t, 4) + "."}
	type saved struct {
		ID        int      `json:"id"`
		Link      string   `json:"link"`
		Published bool     `json:"published"`
		Notices   []string `json:"notices"`
	}
	js := fmt.Sprintf(`(async () => {
		const ed = wp.data.dispatch('core/editor');
		ed.editPost({title: %q, content: '<!-- wp:paragraph --><p>' + %q + '</p><!-- /wp:paragraph -->', status: 'publish'});
		await ed.savePost();
		const s = wp.data.select('core/editor');
		return {
			id: s.getCurrentPostId(),
			link: s.getPermalink() || '',
			published: s.isCurrentPostPublished(),
			notices: wp.data.select('core/notices').getNotices().map(n => n.status + ': ' + n.content),
		};
	})()`, post.Title, post.Body)
	r, err := chromedp.Run(wpStep(t, tab), chromedp.Evaluate[saved](js, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("publishing: %v", err)
	}
	if !r.Published || r.ID == 0 {
		t.Fatalf("the post is not published: %+v", r)
	}
	t.Logf("post %d published: %q", r.ID, r.Notices)
	post.ID, post.link = r.ID, r.Link
	slug := wp.query(t, "SELECT post_name FROM wordpress.wp_posts WHERE ID = ? AND post_status = 'publish' AND post_type = 'post'", r.ID)
	if slug != "hello-from-sluice" {
		t.Errorf("the post's slug in the database = %q, want hello-from-sluice", slug)
	}
	return post
}

// unicodeTitle is a title whose slug is percent-encoded UTF-8.
const unicodeTitle = "Привет из Sluice"

// publishUnicodePost publishes a post titled unicodeTitle through the REST
// API (wp.apiFetch, in the block editor's page in tab, with its nonce)
// and returns it with its slug in link.
func publishUnicodePost(t *testing.T, tab context.Context) *wpPost {
	t.Helper()
	type created struct {
		ID   int    `json:"id"`
		Slug string `json:"slug"`
	}
	post := &wpPost{Title: unicodeTitle, Body: "Кириллица, " + wpRandomHex(t, 4) + "."}
	js := fmt.Sprintf(`wp.apiFetch({path: '/wp/v2/posts', method: 'POST', data: {title: %q, content: %q, status: 'publish'}})
		.then(p => ({id: p.id, slug: p.slug}))`, post.Title, post.Body)
	r, err := chromedp.Run(wpStep(t, tab), chromedp.Evaluate[created](js, chromedp.EvalAwaitPromise))
	if err != nil || r.ID == 0 {
		t.Fatalf("publishing %q over the REST API: %+v %v", post.Title, r, err)
	}
	// WordPress makes the slug of the title's UTF-8, percent-encoded
	// (lowercased too, with PHP's mbstring).
	if slug, err := url.PathUnescape(r.Slug); err != nil || !strings.EqualFold(slug, "привет-из-sluice") || r.Slug == slug {
		t.Errorf("the slug of %q = %q, want привет-из-sluice percent-encoded", post.Title, r.Slug)
	}
	post.ID, post.link = r.ID, r.Slug
	return post
}

// checkUnicodePost fetches the post of publishUnicodePost at its pretty
// permalink, spelled as WordPress spells it (lowercase hex) and as
// browsers may (uppercase hex): Sluice passes REQUEST_URI as received,
// and WordPress finds the post either way.
func checkUnicodePost(t *testing.T, base string, post *wpPost) {
	t.Helper()
	upper := regexp.MustCompile(`%[0-9a-f]{2}`).ReplaceAllStringFunc(post.link, strings.ToUpper)
	if upper == post.link {
		t.Fatalf("the slug %q has no lowercase hex digit", post.link)
	}
	for _, slug := range []string{post.link, upper} {
		u := base + "/" + slug + "/"
		resp, body := sluicetest.Get(t, u)
		if resp.StatusCode != 200 || !strings.Contains(body, post.Title) || !strings.Contains(body, post.Body) {
			t.Errorf("GET %s = %d, want 200 and the post %q", u, resp.StatusCode, post.Title)
		}
	}
}

// visitPost loads the post by its permalink in tab.
func visitPost(t *testing.T, tab context.Context, post *wpPost) {
	t.Helper()
	wpLoad(t, tab, post.link, 200)
	wpWantText(t, tab, post.Title, post.Body)
	title, err := chromedp.Run(wpStep(t, tab), chromedp.Text(chromedp.CSS("h1.wp-block-post-title")))
	if err != nil || strings.TrimSpace(title) != post.Title {
		t.Errorf("the post's h1 = %q (%v), want %q", title, err, post.Title)
	}
}

// checkFrontController checks, over HTTP, what reaches WordPress's front
// controller, and what must not.
func checkFrontController(t *testing.T, base string, post *wpPost, pathInfoLink string, wp *wordpress) {
	t.Helper()
	// The REST API's pretty URL with a query: the front controller
	// answers, the query kept (the search finds the post, or nothing).
	for q, want := range map[string]string{
		"search=hello+sluice&_fields=id,link": fmt.Sprintf(`[{"id":%d,"link":%q}]`, post.ID, post.link),
		"search=nothing+like+it&_fields=id":   `[]`,
	} {
		resp, body := sluicetest.Get(t, base+"/wp-json/wp/v2/posts?"+q)
		if resp.StatusCode != 200 || strings.ReplaceAll(body, `\/`, "/") != want || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
			t.Errorf("GET /wp-json/wp/v2/posts?%s = %d %s %s, want 200 %s", q, resp.StatusCode, resp.Header.Get("Content-Type"), body, want)
		}
	}
	// The plain permalink (?p=ID) and the PATH_INFO one WordPress gave
	// before: WordPress redirects both to the pretty one.
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, u := range []string{fmt.Sprintf("%s/?p=%d", base, post.ID), pathInfoLink} {
		r, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode != 301 || r.Header.Get("Location") != post.link {
			t.Errorf("GET %s = %d Location %q, want 301 to %s", u, r.StatusCode, r.Header.Get("Location"), post.link)
		}
	}
	// /wp-admin, a folder, redirects to /wp-admin/, which runs its
	// index.php (and, not logged in, redirects to the login page).
	for u, want := range map[string]string{
		base + "/wp-admin":  base + "/wp-admin/",
		base + "/wp-admin/": base + "/wp-login.php?redirect_to=" + url.QueryEscape(base+"/wp-admin/") + "&reauth=1",
	} {
		r, err := c.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		// sluice's Location is relative, WordPress's absolute.
		if loc, err := r.Location(); r.StatusCode/100 != 3 || err != nil || loc.String() != want {
			t.Errorf("GET %s = %d Location %q, want a redirect to %s", u, r.StatusCode, r.Header.Get("Location"), want)
		}
	}
	// HEAD of a PHP page: its head and no body, and the connection goes
	// on to the next request.
	host := strings.TrimPrefix(base, "http://")
	path := strings.TrimPrefix(post.link, base)
	conn := sluicetest.Dial(t, host)
	for _, method := range []string{"HEAD", "GET"} {
		resp, body := conn.RoundTrip(t, method+" "+path+" HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || (body == "") != (method == "HEAD") {
			t.Errorf("%s %s = %d %s, %d bytes", method, path, resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
		}
	}
	// The feed, from the front controller: WordPress's ETag, and its 304
	// (a CGI Status: 304) to a request that has it.
	resp, body := sluicetest.Get(t, base+"/feed/")
	etag := resp.Header.Get("ETag")
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/rss+xml") || etag == "" || !strings.Contains(body, post.Title) {
		t.Errorf("GET /feed/ = %d %s ETag %q, want 200, the feed with the post", resp.StatusCode, resp.Header.Get("Content-Type"), etag)
	}
	if resp, body := sluicetest.Get(t, base+"/feed/", "If-None-Match", etag); resp.StatusCode != 304 || body != "" {
		t.Errorf("GET /feed/ with If-None-Match: %s = %d, %d bytes; want 304 and no body", etag, resp.StatusCode, len(body))
	}
	// xmlrpc.php runs as the script it is, and answers a GET with 405.
	if resp, body := sluicetest.Get(t, base+"/xmlrpc.php"); resp.StatusCode != 405 || !strings.Contains(body, "XML-RPC server accepts POST requests only.") {
		t.Errorf("GET /xmlrpc.php = %d %q, want 405 from WordPress", resp.StatusCode, wpTail([]byte(body), 200))
	}
	// A slug no post has is WordPress's 404 page.
	resp, body = sluicetest.Get(t, base+"/no-such-post-at-all/")
	if resp.StatusCode != 404 || !strings.Contains(body, wpTitle) {
		t.Errorf("GET /no-such-post-at-all/ = %d, want WordPress's 404 page", resp.StatusCode)
	}
	// wp-config.php runs (and prints nothing): its source, with the
	// database's password, is never sent.
	resp, body = sluicetest.Get(t, base+"/wp-config.php")
	if resp.StatusCode != 200 || strings.Contains(body, "DB_PASSWORD") || strings.Contains(body, wp.password) {
		t.Errorf("GET /wp-config.php = %d, %d bytes; want 200 and nothing of its source", resp.StatusCode, len(body))
	}
}

// wpTestImage is a PNG of w×h pixels of noise, which does not compress:
// its upload is a body of several FastCGI records.
func wpTestImage(t *testing.T, w, h int) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	noise := make([]byte, 3*w*h)
	if _, err := io.ReadFull(rand.Reader, noise); err != nil {
		t.Fatal(err)
	}
	for y := range h {
		for x := range w {
			p := noise[3*(y*w+x):]
			img.Set(x, y, color.RGBA{p[0], p[1], p[2], 255})
		}
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// uploadImage uploads a PNG through the media library's uploader
// (plupload, a multipart POST to async-upload.php), then fetches it back,
// and its smaller sizes, as static files.
func uploadImage(t *testing.T, tab context.Context, base string, wp *wordpress) {
	t.Helper()
	img := wpTestImage(t, 400, 300)
	file := filepath.Join(t.TempDir(), "sluice-test-image.png")
	if err := os.WriteFile(file, img, 0o644); err != nil {
		t.Fatal(err)
	}
	wpLoad(t, tab, base+"/wp-admin/media-new.php", 200)
	// The uploader (plupload) takes the file once it has started.
	wpPoll(t, tab, "the uploader", `typeof uploader === 'object' && uploader !== null && uploader.runtime === 'html5'`)
	if err := chromedp.Do(wpStep(t, tab), chromedp.SetUploadFiles(chromedp.CSS("#plupload-upload-ui input[type=file]"), []string{file})); err != nil {
		t.Fatalf("choosing the file to upload: %v\n%s", err, wpPageText(t, tab))
	}
	// The uploader lists the file; once uploaded, with a button that
	// copies its URL; a failed upload shows an error instead.
	u, err := chromedp.Run(wpStep(t, tab), chromedp.Poll[string](`(() => {
		const err = document.querySelector('.media-item .error-div, .upload-error');
		if (err) return 'error: ' + err.outerHTML;
		const b = document.querySelector('.media-item .copy-attachment-url');
		return b ? b.dataset.clipboardText : '';
	})()`, chromedp.WithPollingInterval(50*time.Millisecond)))
	if err != nil || strings.HasPrefix(u, "error: ") {
		t.Fatalf("uploading the image: %v %s\n%s", err, u, wpPageText(t, tab))
	}
	if !strings.HasPrefix(u, base+"/wp-content/uploads/") || !strings.HasSuffix(u, "/sluice-test-image.png") {
		t.Fatalf("the uploaded image's URL is %q", u)
	}
	guid := wp.query(t, "SELECT guid FROM wordpress.wp_posts WHERE post_type = 'attachment' AND post_mime_type = 'image/png'")
	if guid != u {
		t.Errorf("the attachment's guid in the database = %q, want %q", guid, u)
	}
	resp, body := sluicetest.Get(t, u)
	if resp.StatusCode != 200 || body != string(img) || resp.Header.Get("Content-Type") != "image/png" {
		t.Errorf("GET %s = %d, %s, %d bytes (same: %v); want 200, image/png, the %d bytes uploaded",
			u, resp.StatusCode, resp.Header.Get("Content-Type"), len(body), body == string(img), len(img))
	}
	// PHP's GD made the smaller sizes WordPress's themes use.
	dir := strings.TrimSuffix(u, "/sluice-test-image.png")
	for _, size := range []string{"150x150", "300x225"} {
		resp, body := sluicetest.Get(t, dir+"/sluice-test-image-"+size+".png")
		cfg, _, err := image.DecodeConfig(strings.NewReader(body))
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "image/png" || err != nil || fmt.Sprintf("%dx%d", cfg.Width, cfg.Height) != size {
			t.Errorf("GET the %s size: %d, %s, %v, %dx%d", size, resp.StatusCode, resp.Header.Get("Content-Type"), err, cfg.Width, cfg.Height)
		}
	}
	// The image is served as a static file: files' ranges and the
	// site's static max_age.
	req, err := http.NewRequest("GET", u, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Range", "bytes=100-199")
	rr, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	part, _ := io.ReadAll(rr.Body)
	rr.Body.Close()
	if rr.StatusCode != 206 || !bytes.Equal(part, img[100:200]) || rr.Header.Get("Cache-Control") != "max-age=86400" {
		t.Errorf("GET %s, Range bytes=100-199: %d, %d bytes (right ones: %v), Cache-Control %q; want 206, the 100 bytes, max-age=86400",
			u, rr.StatusCode, len(part), bytes.Equal(part, img[100:200]), rr.Header.Get("Cache-Control"))
	}

	// A PHP file that got into the uploads (WordPress refuses to upload
	// one; a plugin's hole might not) does not run there, which is marked
	// never executable: 403, whatever follows it in the path. The same
	// file elsewhere runs: the 403 is the marking's.
	rel := strings.TrimPrefix(dir, base+"/")
	script := "<?php echo 'ran-' . (6 * 7);\n"
	writeConfig(t, filepath.Join(wp.root, "wp-content", "control.php"), script)
	if resp, body := sluicetest.Get(t, base+"/wp-content/control.php"); resp.StatusCode != 200 || body != "ran-42" {
		t.Fatalf("GET /wp-content/control.php = %d %q, want 200 ran-42", resp.StatusCode, body)
	}
	writeConfig(t, filepath.Join(wp.root, filepath.FromSlash(rel), "evil.php"), script)
	for p, want := range map[string]int{
		"/evil.php":                       403,
		"/evil.php/x":                     403,
		"/sluice-test-image.png/evil.php": 403,
		"/sluice-test-image.png/x.php":    403,
	} {
		resp, body := sluicetest.Get(t, dir+p)
		if resp.StatusCode != want || strings.Contains(body, "ran-42") || strings.Contains(body, "<?php") {
			t.Errorf("GET %s%s = %d %q, want %d", rel, p, resp.StatusCode, wpTail([]byte(body), 200), want)
		}
	}
}

// commentAndApprove comments on the post as a visitor, in a browser
// context of its own (no cookie of the admin's), approves the comment as
// the admin, and checks the visitor then sees it.
func commentAndApprove(t *testing.T, browser, admin context.Context, base string, post *wpPost, wp *wordpress) {
	t.Helper()
	visitor, closeVisitor := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer closeVisitor()
	wpLoad(t, visitor, post.link, 200)
	// Characters a form body percent-encodes, and UTF-8.
	comment := "A comment from a visitor: a+b=c & 100% sure; Grüße, " + wpRandomHex(t, 4) + "."
	wpFill(t, visitor, map[chromedp.CSS]string{
		"#comment": comment,
		"#author":  "Visitor",
		"#email":   "visitor@example.com",
	})
	u := wpSubmit(t, visitor, "#commentform #submit")
	if pu, err := url.Parse(u); err != nil || pu.Query().Get("unapproved") == "" || !strings.HasPrefix(u, post.link) {
		t.Errorf("commenting led to %s, want the post with ?unapproved=ID", u)
	}
	wpWantText(t, visitor, "Your comment is awaiting moderation.", comment)
	// WordPress stores the "&" as "&amp;".
	id := wp.query(t, "SELECT comment_ID FROM wordpress.wp_comments WHERE comment_content = ? AND comment_approved = '0' AND comment_post_ID = ?",
		strings.ReplaceAll(comment, "&", "&amp;"), post.ID)

	// The admin approves it from the list of comments awaiting it.
	wpLoad(t, admin, base+"/wp-admin/edit-comments.php?comment_status=moderated", 200)
	wpWantText(t, admin, comment)
	approve, err := chromedp.Run(wpStep(t, admin), chromedp.Evaluate[string](
		fmt.Sprintf("(document.querySelector('#comment-%s .approve a') || {}).href || ''", id)))
	if err != nil || approve == "" {
		t.Fatalf("no Approve link for comment %s: %v", id, err)
	}
	wpLoad(t, admin, approve, 200)
	if got := wp.query(t, "SELECT comment_approved FROM wordpress.wp_comments WHERE comment_ID = ?", id); got != "1" {
		t.Fatalf("comment %s: comment_approved = %q after approving, want 1", id, got)
	}
	wpLoad(t, visitor, post.link, 200)
	wpWantText(t, visitor, comment)
	if text := wpPageText(t, visitor); strings.Contains(text, "awaiting moderation") {
		t.Errorf("the approved comment is still awaiting moderation:\n%s", text)
	}
}

// checkPages loads pages a visitor sees, in a tab with no cookie, and
// checks each as the demo's browser test does: every script,
// stylesheet and image loads, no console error; the page and some of
// what it loads came compressed.
func checkPages(t *testing.T, browser context.Context, base string, post *wpPost) {
	t.Helper()
	visitor, closeVisitor := chromedp.NewContext(browser, chromedp.WithNewBrowserContext())
	defer closeVisitor()
	c := &crawl{browser: visitor}
	for _, u := range []string{base + "/", post.link, base + "/wp-login.php"} {
		r := c.check(u, nil, 200)
		for _, p := range r.problems {
			t.Errorf("%s: %s", u, p)
		}
		// The pages, from PHP, and their scripts and stylesheets, from
		// files, came compressed, and decoded.
		if !slices.ContainsFunc(r.encoded, func(e string) bool { return strings.HasSuffix(e, " "+u) }) || len(r.encoded) < 2 {
			t.Errorf("%s: decoded from a Content-Encoding: %q; want the page and more", u, r.encoded)
		}
	}
}

// checkCron checks that WP-Cron ran: a page load that finds a task due
// (the update checks the first page after the installer scheduled, due
// at once) has PHP post to /wp-cron.php on the site, and hang up at once
// (a timeout of 10 ms); wp-cron.php, which ignores the client's going,
// ends its response with fastcgi_finish_request and runs the task, which
// schedules its next run 12 hours later.
func checkCron(t *testing.T, wp *wordpress) {
	t.Helper()
	// The option is a serialized PHP array of the times tasks are due
	// at, each an array of the tasks then: i:TIME;a:N:{s:LEN:"HOOK";...
	// A task's time is the last such key before its name (the tasks'
	// own integers are values, not keys of arrays).
	due := regexp.MustCompile(`i:(\d+);a:\d+:\{`)
	sluicetest.WaitFor(t, "WP-Cron to run wp_version_check", func() bool {
		cron := wp.query(t, "SELECT option_value FROM wordpress.wp_options WHERE option_name = 'cron'")
		i := strings.Index(cron, `s:16:"wp_version_check"`)
		if i < 0 {
			return false
		}
		m := due.FindAllStringSubmatch(cron[:i], -1)
		if m == nil {
			return false
		}
		at, _ := strconv.ParseInt(m[len(m)-1][1], 10, 64)
		return time.Unix(at, 0).After(time.Now().Add(time.Hour))
	})
}

// wpRandomHex is n random bytes in hex.
func wpRandomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := io.ReadFull(rand.Reader, b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// wpTail is the last n bytes of b at most.
func wpTail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}
