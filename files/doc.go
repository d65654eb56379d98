// Package files serves a directory tree, or any fs.FS, over the engine.
//
// A Server answers GET and HEAD with the file a request path names (200,
// or 206 for byte ranges), conditional requests with 304 or 412, OPTIONS
// with 204 and an Allow field, and every other method with 405 and the
// same Allow field ("GET, HEAD, OPTIONS"). Errors have a one-line
// plain-text body. A Server is an engine.Handler; the components package
// wraps it as the pipeline source `files` (Decide, Reply).
//
// # Paths and confinement
//
// The request path (after Options.StripPrefix) is mapped to a file name.
// From the engine it is already the canonical path (engine.Request.Path:
// decoded, dot segments removed, repeated slashes merged; an encoded
// slash, a NUL and a ".." above the root refused with 400), so the file
// served for a path is the one its canonical spelling names. As defence
// in depth for a Request built by other code, files checks again: a path
// containing NUL or a backslash (also encoded as %5c), a ".." segment, or
// an encoded slash ("%2f") in the raw path is answered 404 Not Found
// without touching the file system, and "." segments and repeated slashes
// are cleaned as the engine cleans them. 404 rather than 400 is
// deliberate: such a request names no file, and the answer looks like any
// other missing file. PathMap is this mapping, exported for the
// components that must see a request land where the Server would serve it.
//
// A segment beginning with "." (a dotfile or dot-directory) is hidden
// (404) by default, refused (403) or served as Options.Dotfiles says; a
// leading "/.well-known/" (RFC 8615) is always served. New opens the root
// once and looks files up beneath it with os.Root, so a symbolic link is
// followed only while it stays inside the root, whatever the tree becomes
// meanwhile; Options.FollowSymlinks lifts that (unsafe: see Options). A
// file the server may not read is 403 Forbidden; a missing one 404.
//
// # Index files and listings
//
// A request for a directory is answered with its first index file
// (Options.Index, "index.html" by default) when the path ends in a slash,
// and with a 301 redirect to the path with the slash added (keeping the
// query) when it does not. A directory without an index file is 404, or,
// with Options.Browse, a listing: HTML with escaped names and links,
// sizes and modification times, sorted by the query (sort=name|size|time,
// order=asc|desc), or JSON when the Accept field prefers application/json
// (RFC 9110 §12.5.1, as httpgrammar.Negotiate decides: HTML on a tie).
// A listing is rendered as the client reads it, chunked, and holds only
// the entries it shows: at most Options.MaxListing, the first in the
// order asked for (the HTML page says how many the directory has), so its
// memory is bounded whatever the directory's size and the client's speed.
//
// # Media types
//
// Content-Type comes from the file's extension: Options.Types first, then
// a built-in table of the common web types, then /etc/mime.types when the
// host has one, then Go's mime package; unknown extensions are
// application/octet-stream. text/* types get "; charset=utf-8" unless
// they name a charset. Options.NoSniff adds "X-Content-Type-Options:
// nosniff".
//
// # Validators and conditional requests
//
// Every file carries a strong ETag (from its inode, size and modification
// time, or for content without a modification time, such as embed.FS,
// from a hash of the content) and a Last-Modified field when its
// modification time is known. The conditional fields are evaluated in the
// order of RFC 9110 §13.2.2: If-Match (strong comparison; "*" matches an
// existing file) and, without it, If-Unmodified-Since answer 412; then
// If-None-Match (weak comparison) and, without it, If-Modified-Since
// answer 304; then If-Range decides whether a Range field is honoured (an
// entity tag by strong comparison, or the exact Last-Modified date). A 304
// carries the ETag, Vary, Cache-Control, Expires and (for a precompressed
// variant) Content-Encoding a 200 would, and Last-Modified only when there
// is no ETag. Repeated lines of a list field are one list; a date field
// sent twice is ignored. A file dated in the future has no Last-Modified
// until its time has come, and a file changed in the current second none
// until that second is over: Date may still show the second before, and
// a date whose second is not over would not tell this version from the
// next (RFC 9110 §8.8.2).
//
// # Ranges
//
// A GET's Range field (RFC 9110 §14) may ask for single ranges, suffixes
// ("bytes=-500") and open ends ("bytes=9500-"). Overlapping ranges and
// ranges at most 80 bytes apart are merged; parts keep the order they
// were asked in (a merged range where its first member was); one
// range is a 206 with Content-Range, several a multipart/byteranges 206
// with an exact Content-Length. The response can never exceed the file
// plus Options.MaxRanges (16) part headers: a field with more ranges after
// merging, or more than 1000 range-specs, is ignored (200 with the whole
// file), as is a field with another unit or invalid syntax. A field whose
// ranges all start past the end is 416 with "Content-Range: bytes */LEN".
// HEAD ignores Range.
//
// # Precompressed files
//
// A file "a.css" may have precompressed variants beside it: "a.css.br",
// "a.css.zst" and "a.css.gz" (Options.Precompressed). The variant the
// client's Accept-Encoding prefers (q-values, "*", "identity;q=0"; the
// server's order br, zstd, gzip breaks ties; httpgrammar.Negotiate
// decides, as it does for the compress component) is served with
// Content-Encoding, its own ETag and Content-Length; ranges and
// conditional requests apply to it. A variant older than its original is
// stale and ignored. Every response for a file that has variants carries
// "Vary: Accept-Encoding".
//
// # Caching and speed
//
// What the Server learns about a request path (found, missing, a
// redirect, and for a file its size, modification time, inode, header
// values and variants) is cached under the cleaned path for Options.Expiry
// (1s by default), like Warp's FileInfoCache, so a hot file costs no
// system call but the response's write. Files up to Options.MaxMemFile
// (96 KiB) are held in memory (within Options.MaxMemBytes) and leave in
// one write together with the response header: up to about that size one
// write costs less than sendfile's two system calls and page references.
// After the expiry the file is stat'ed again by one request (others
// meanwhile use what is cached); a file whose size, modification time or
// inode changed is read again. A file replaced on disk is therefore
// served within one expiry of the change.
//
// Larger files are sent with sendfile(2), the header leaving with the
// first bytes (MSG_MORE), from an open-file cache like Warp's FdCache but
// reference counted: one *os.File per file is shared by every request
// sending it (sendfile does not move its offset), each request holds a
// reference while it sends, and the file is closed when it has not been
// used for Options.OpenExpiry (10s), or as soon as its cache entry is
// replaced (the file changed) — in both cases only once the last transfer
// using it ends, so a descriptor is never closed, and its number reused,
// under a transfer. A client that disconnects mid-transfer drops its
// reference at once. The open file is checked against the cached metadata
// when it is opened, so a response never mixes the header of one version
// with the body of another; replace files by rename (as deployment tools
// do) so that a transfer in progress keeps reading the version it began
// with. Large files stream in constant memory.
//
// # Cache-Control
//
// Options.MaxAge sends "Cache-Control: max-age=N" and an Expires field
// with files (200, 206, 304), Options.Immutable adds "immutable", and
// Options.NoCache sends "no-cache" instead. Error responses carry none.
package files
