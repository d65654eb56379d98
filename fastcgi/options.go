package fastcgi

import (
	"log/slog"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// Defaults of Options.
const (
	DefaultResponseHeaderTimeout = 60 * time.Second
	DefaultReadTimeout           = 60 * time.Second
	DefaultSendTimeout           = 60 * time.Second
	DefaultMaxHeaderBytes        = 64 << 10
	DefaultMaxBody               = 8 << 20
	DefaultIndex                 = "index.php"
)

// DefaultSplitPath is the default of Options.SplitPath.
var DefaultSplitPath = []string{".php"}

// Options configures a Client. The yaml tags are the keys of a config
// file's fastcgi entry (components.FastCGIOptions embeds Options). The
// zero value of every field but Upstreams and Root (or Script) is a valid
// default.
type Options struct {
	// Options are the upstream settings shared with the proxy: the
	// upstreams (each unix:/path, host:port or tcp://host:port), policy,
	// hash_key, retries, max_conns, queue, queue_timeout,
	// max_idle_conns, connect_timeout, idle_timeout, passive and health
	// (whose path is sent as a FastCGI request, such as PHP-FPM's
	// ping.path). A FastCGI server such as PHP-FPM gives each
	// connection a worker of its own for as long as it stays open, idle
	// or not: set max_conns to the pool's pm.max_children (a request
	// beyond it then waits in Sluice's queue, not in the server's
	// listen backlog behind idle connections).
	upstream.Options `yaml:",inline"`

	// Root is the document root: scripts are found under it (through
	// os.Root, so that neither ".." nor a symbolic link leads out of it)
	// and it is DOCUMENT_ROOT. Required.
	Root string `yaml:"root"`

	// Script, when set, is run for every request instead of the script
	// the path names: a front controller, such as index.php. A path
	// relative to Root (or an absolute one under it); it must be a
	// regular file under Root, reached through os.Root. Its SCRIPT_NAME
	// is its path under Root ("/index.php"), with no PATH_INFO. The php
	// source refuses it: it picks the script itself (its try list ends
	// in the front controller).
	Script string `yaml:"script"`

	// SplitPath lists the extensions that end a script's name (default
	// [".php"]): the path is split after the first segment ending in one,
	// the rest being PATH_INFO. Only files with such a name run.
	SplitPath []string `yaml:"split_path"`

	// Index is the script a path ending in "/" runs (default
	// "index.php").
	Index string `yaml:"index"`

	// NoExec lists directories, as URL path prefixes, in which no script
	// ever runs ("/wp-content/uploads/"), answered 403. A prefix matches
	// itself and the paths below it, in any ASCII case; "//", "." and a
	// trailing "/" are dropped at New, and one with ".." is refused. A
	// script is refused too when the file, its symbolic links inside
	// Root resolved, is in such a directory (compared by device and
	// inode, so that a link, a bind mount or another case on a
	// case-insensitive file system names it as well).
	NoExec []string `yaml:"no_exec"`

	// Env adds parameters to every request (APP_ENV: production). One
	// with the name of a parameter the request sets (HTTPS, SERVER_NAME,
	// HTTP_X_FORWARDED_PROTO…) replaces it: the request's is not sent.
	// SCRIPT_FILENAME, SCRIPT_NAME, PATH_INFO, PATH_TRANSLATED and
	// DOCUMENT_ROOT, which name the script Sluice checked, are refused.
	Env map[string]string `yaml:"env"`

	// ResponseHeaderTimeout bounds the wait for the response head once
	// the request is sent (default 60s); expiry answers 504. Like the
	// two below, it may expire up to an eighth of it (at most 1s) late:
	// a connection keeps its timer between requests.
	ResponseHeaderTimeout time.Duration `yaml:"response_header_timeout"`

	// ReadTimeout bounds the wait between two reads of the response
	// after its head (default 60s); expiry cuts the response short.
	ReadTimeout time.Duration `yaml:"read_timeout"`

	// SendTimeout bounds each write of the request to the upstream
	// (default 60s); expiry answers 502.
	SendTimeout time.Duration `yaml:"send_timeout"`

	// MaxHeaderBytes bounds the response head the application writes
	// (default 64 KiB); a larger one is answered 502.
	MaxHeaderBytes int `yaml:"max_header_bytes"`

	// MaxBody bounds a chunked request body, which is read whole before
	// it is sent because FastCGI needs CONTENT_LENGTH: the first 64 KiB
	// in memory, the rest in an unlinked temporary file (see cgi.Spool).
	// A larger one gets 413. Bodies with a Content-Length are streamed
	// whatever their size (the server's body limit applies). Default 8
	// MiB.
	MaxBody int64 `yaml:"max_body"`

	// LocalRedirect handles a request again for a local redirect (RFC
	// 3875 §6.2.2: a response whose Location is a path on this server,
	// "/login?next=x", without a Status field): the request, its path,
	// query and target replaced by the Location's and made a GET (HEAD
	// stays HEAD) without a body, is passed to it within the content
	// phase, and the Content it sets up (pipe.Conn.SetContent, or Error)
	// is written as the response. nil is the Client's own Handle. A
	// component built on the Client that picks scripts itself sets its
	// own Handle (package php does). At most 10 hops are followed; then
	// 500.
	LocalRedirect func(c *pipe.Conn) bool `yaml:"-"`

	// Logger receives upstream failures and the application's stderr
	// (FCGI_STDERR, rate-limited); nil is slog.Default().
	Logger *slog.Logger `yaml:"-"`
}
