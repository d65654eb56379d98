// Package fastcgi is a FastCGI 1.0 client in the responder role: the
// fastcgi component, which passes requests to a FastCGI server such as
// PHP-FPM over kept-alive connections (FCGI_KEEP_CONN), pooled per
// upstream by package upstream, which gives it the balancing, passive and
// active health checks, max_conns queue and retries of the proxy.
//
// # Scripts
//
// A request runs a script only when Resolve finds one: the canonical
// path is split after its first segment ending in a SplitPath extension
// (".php"), and that part must name a regular file under Root, reached
// through os.Root (no "..", no symbolic link out of the root), with no
// dot-file segment and not under a NoExec prefix; no control byte may
// appear anywhere in the path (CVE-2019-11043). So whatever PHP-FPM's
// cgi.fix_pathinfo and security.limit_extensions say, the
// SCRIPT_FILENAME it is sent is a file that exists and ends in .php.
//
// # Parameters and response
//
// The parameters are the CGI meta-variables of package cgi (cgi.Vars),
// with SCRIPT_FILENAME, DOCUMENT_ROOT and Options.Env; the request body is
// sent as FCGI_STDIN records (a chunked one spooled first, as CGI needs
// CONTENT_LENGTH). FCGI_STDOUT is read as a CGI response (cgi.ParseHead),
// its body streamed to the client (the records of one read in one
// write) and flushed whenever the server pauses; FCGI_STDERR goes to the
// log, rate-limited.
package fastcgi
