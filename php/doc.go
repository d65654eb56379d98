// Package php serves a PHP site the way its front controller expects, in
// one component: the php shortcut of a config file (what Caddy's
// php_fastcgi and nginx's usual "location ~ \.php$" blocks are). Static
// files are served by package files (its caches, conditional requests,
// ranges and sendfile), PHP scripts run on a FastCGI server such as
// PHP-FPM through package fastcgi.
//
// # What a request runs
//
// For the canonical request path (engine.Request.Path), in this order:
//
//   - A path with a segment starting with "." (".htaccess", ".env",
//     ".git/config"; except a first segment ".well-known") is refused:
//     404 by default, as for a missing file, so that the answer does not
//     tell whether such a file exists; 403 with Options.Dotfiles "deny".
//   - A path with a segment ending in a SplitPath extension (".php") names
//     a script: it is split after the first such segment, the rest being
//     PATH_INFO ("/x.php/a/b" runs x.php with PATH_INFO "/a/b"), and
//     fastcgi.Client.Resolve must find it — a regular file under the root,
//     reached without leaving it, not under a NoExec prefix, with no
//     control byte anywhere in the path. A script that does not exist is
//     404 and never falls through to the front controller, so no
//     spelling of a path ending in ".php" runs a script it does not name;
//     one that may not run (NoExec) is 403.
//   - Otherwise the candidates of Options.Try are tried in turn, by
//     default [$path, $path/, /index.php]:
//   - "$path": the path as a static file, which files answers (200, 206,
//     304, 412, 416, 403, 405 for a method other than GET, HEAD or
//     OPTIONS). A file named like PHP source (".php" in any case,
//     ".phtml", ".phar", ".inc"…) is never served as a static file: 404.
//   - "$path/": the path as a directory: without its trailing slash, a
//     redirect to the slash form (301 for GET and HEAD, 308 for other
//     methods, which must not become a GET) when the directory has an
//     index; with it, the Index script (index.php) runs, or else a static
//     index file (Static.Index, index.html by default) is served.
//   - a fixed path ("/index.php"): that script runs, with SCRIPT_NAME the
//     fixed path and REQUEST_URI and QUERY_STRING those of the request, as
//     a front controller expects.
//
// When no candidate answers, the request is 404.
//
// # Security
//
// A script runs only when Resolve says so: SCRIPT_FILENAME is always a
// file that exists under the root and whose name ends in ".php", so
// PHP-FPM's cgi.fix_pathinfo never has a path to walk back on and its
// security.limit_extensions never sees anything else. An upload
// directory listed in NoExec never runs a script; a PHP file is never
// sent as source text; symbolic links are followed only while they stay
// inside the root (os.Root), for scripts and static files alike.
package php
