// Package files serves a directory tree, or any fs.FS, over the engine.
//
// A Server answers GET and HEAD with the file a request path names,
// OPTIONS with 204 and an Allow field, and every other method with 405 and
// the same Allow field ("GET, HEAD, OPTIONS").
//
// # Paths
//
// The decoded request path is mapped to a file name by path.Clean. A
// request for a directory is answered with its index file (index.html by
// default) when the path ends in a slash, and with a 301 redirect to the
// path with the slash added (keeping the query) when it does not. There is
// no directory listing: a directory without an index file is 404.
//
// These are answered 404 Not Found without touching the file system: a
// path containing NUL or a backslash, a ".." segment (before cleaning), a
// segment beginning with "." (a dotfile or dot-directory) other than a
// leading "/.well-known/", and an encoded slash ("%2f" or "%2F") in the
// raw path. 404 rather than 400 is deliberate: such a request names no file,
// and the answer looks like any other missing file. A symbolic link is
// followed only while it stays inside the root (see New).
//
// # Caching
//
// What the Server learns about a request path (found, missing, a
// redirect, and for a file its size, modification time, inode and header
// values) is cached under the cleaned path for Options.Expiry (1s by
// default), so a hot file costs no system call. Files up to
// Options.MaxMemFile (64 KiB) are held in memory with their headers
// precomputed and leave in one write together with the response header.
// After the expiry the file is stat'ed again; a file whose size,
// modification time or inode changed is read again. A file replaced on
// disk is therefore served within one expiry of the change.
//
// Larger files are opened for each GET and sent with sendfile(2) when the
// response writer implements engine.FileSender and the file is an
// *os.File; otherwise they are copied.
//
// # Conditional requests
//
// Every file carries a strong ETag (from its inode, size and modification
// time, or for content without a modification time, such as embed.FS,
// from a hash of the content) and a Last-Modified field when its
// modification time is known. If-None-Match (weak comparison, "*") and
// If-Modified-Since are honoured with 304 Not Modified, in the order of RFC
// 9110 §13.2.2. Range requests are not supported yet.
package files
