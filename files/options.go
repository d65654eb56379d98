package files

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Options tunes a Server. The zero value gives the defaults documented on
// each field. The yaml tags are the keys a Sluice config file sets them
// with (components.FilesOptions embeds Options); the fields tagged "-"
// are for Go code only.
type Options struct {
	// Index lists the files tried, in order, for a request ending in a
	// slash. Default [index.html] (nil means DefaultIndex); an empty list
	// means none.
	Index []string `yaml:"index"`

	// Browse lists a directory that has no index file: HTML, or JSON when
	// the client prefers application/json; sorted with
	// ?sort=name|size|time&order=asc|desc. Default off: such a directory
	// is 404.
	Browse bool `yaml:"browse"`

	// MaxListing bounds the entries a listing shows: the first MaxListing
	// in the order asked for, with a note in the HTML page saying how many
	// the directory has (the JSON array just ends). It bounds the memory a
	// listing holds while its client reads it, about 100 bytes an entry.
	// Default 10000 (zero means DefaultMaxListing).
	MaxListing int `yaml:"max_listing"`

	// Dotfiles says what happens to a path with a segment starting with
	// "." (".env", ".git/config"): "hide" (DotfilesHide, the default)
	// answers 404 as for a missing file, "deny" (DotfilesDeny) answers
	// 403, "allow" (DotfilesAllow) serves them. A first segment
	// ".well-known" (RFC 8615) is always served; ".." is never.
	Dotfiles string `yaml:"dotfiles"`

	// FollowSymlinks follows symbolic links wherever they lead, even out
	// of the root. UNSAFE: anyone who can create a link in the tree (an
	// upload directory, a shared checkout) can then publish any file the
	// server can read. By default a link is followed only while it stays
	// inside the root, checked by the kernel with os.Root.
	FollowSymlinks bool `yaml:"follow_symlinks"`

	// Types maps file extensions (".md", case-insensitive, with the dot)
	// to media types, before the built-in table and /etc/mime.types:
	// {".md": "text/markdown"}. A text/* type without a charset parameter
	// gets "; charset=utf-8".
	Types map[string]string `yaml:"types"`

	// NoSniff adds "X-Content-Type-Options: nosniff" to file responses.
	NoSniff bool `yaml:"nosniff"`

	// Precompressed lists the content codings whose precompressed files
	// ("style.css.br", "style.css.zst", "style.css.gz" beside "style.css")
	// are served to clients that accept them, in the server's order of
	// preference: any of "br", "zstd", "gzip". Default [br, zstd, gzip]
	// (nil means DefaultPrecompressed); an empty list turns the feature
	// off.
	Precompressed []string `yaml:"precompressed"`

	// MaxAge, when positive, sends "Cache-Control: max-age=N" and an
	// Expires field MaxAge from now with every file: a duration of whole
	// seconds such as 1h or 720h.
	MaxAge time.Duration `yaml:"max_age"`

	// Immutable adds "immutable" to Cache-Control (RFC 8246): for
	// fingerprinted assets that never change under their names. It needs
	// MaxAge.
	Immutable bool `yaml:"immutable"`

	// NoCache sends "Cache-Control: no-cache": caches must revalidate
	// every time (cheap with the validators every file carries). It
	// excludes MaxAge.
	NoCache bool `yaml:"no_cache"`

	// StripPrefix is removed from the start of the request path before
	// the path is mapped to a file ("/static" serves /static/a.css from
	// ROOT/a.css). A path without the prefix is 404.
	StripPrefix string `yaml:"strip_prefix"`

	// Try lists the paths tried in turn for a GET or HEAD, as nginx's
	// try_files does: "$path" in a candidate stands for the request path
	// (a placeholder that needs no quotes in YAML, where {path} would be
	// a map), and a candidate without it is a fixed path ("/index.html").
	// The first candidate the Server would not answer 404 is the answer,
	// as if it had been requested — its file (200, with the file's own
	// validators, ranges and precompressed variants), its directory's
	// index or listing when it ends in "/", a redirect when it names a
	// directory without the slash, a 403 — under the URL requested; when
	// every candidate is 404, so is the answer. So [$path, /index.html]
	// serves a single-page app's client-side routes, and
	// [$path, $path.html] serves /about from about.html.
	//
	// Each candidate is a request path, checked as one: StripPrefix
	// applies to it, and a candidate with $path is refused (skipped)
	// wherever the request path itself would be — an encoded slash, a
	// ".." or NUL, a dotfile segment under Dotfiles hide (deny answers 403
	// and ends the search) — so a candidate reaches only files that a
	// request for its own path would be served. A fixed candidate must be
	// a canonical path under StripPrefix; one with $path must start with
	// it and add only a canonical suffix ("/", ".html", "/index.htm").
	// Default none: the request path alone.
	Try []string `yaml:"try"`

	// MaxRanges bounds the byte ranges of one request after overlapping
	// and nearby ranges are merged; a request with more is answered with
	// the whole file (200). Default 16 (zero means DefaultMaxRanges).
	MaxRanges int `yaml:"max_ranges"`

	// Expiry is how long what the Server learned about a path (its file's
	// metadata and content, or that it is missing) is trusted before the
	// file system is asked again: a changed file is served within Expiry.
	// Default 1s (zero means DefaultExpiry); a negative value means every
	// request checks the file system (content held in memory is still
	// reused while the file is unchanged).
	Expiry time.Duration `yaml:"expiry"`

	// OpenExpiry is how long a file kept open for sendfile stays open
	// without being requested. Zero means DefaultOpenExpiry.
	OpenExpiry time.Duration `yaml:"-"`

	// MaxOpenFiles bounds the files kept open between requests; files
	// beyond it are opened and closed per request. A file too large to
	// hold in memory, and each such precompressed variant, is opened when
	// it is looked up (to answer 403 alike for GET, HEAD and conditional
	// requests) and kept if there is room, until OpenExpiry without use.
	// Zero means DefaultMaxOpenFiles; negative keeps none open.
	MaxOpenFiles int `yaml:"-"`

	// MaxMemFile is the size up to which a file's content is held in
	// memory and written with its header in one write. Zero means
	// DefaultMaxMemFile; negative holds no content in memory.
	MaxMemFile int64 `yaml:"-"`

	// MaxMemBytes bounds the total content held in memory; files beyond it
	// are read from disk on each request. Zero means DefaultMaxMemBytes.
	MaxMemBytes int64 `yaml:"-"`

	// MaxEntries bounds the number of cached paths (including paths found
	// missing). Zero means DefaultMaxEntries.
	MaxEntries int `yaml:"-"`
}

// Values of Options.Dotfiles.
const (
	DotfilesHide  = "hide"
	DotfilesDeny  = "deny"
	DotfilesAllow = "allow"
)

// Defaults for the zero fields of Options.
const (
	DefaultExpiry       = time.Second
	DefaultOpenExpiry   = 10 * time.Second
	DefaultMaxOpenFiles = 1000
	DefaultMaxMemFile   = 96 << 10
	DefaultMaxMemBytes  = 32 << 20
	DefaultMaxEntries   = 10000
	DefaultMaxRanges    = 16
	DefaultMaxListing   = 10000
)

// DefaultIndex is the index file list when Options.Index is nil.
var DefaultIndex = []string{"index.html"}

// DefaultPrecompressed is the list of precompressed codings when
// Options.Precompressed is nil.
var DefaultPrecompressed = []string{"br", "zstd", "gzip"}

// precompressedExt maps a content coding to the extension of its files.
var precompressedExt = map[string]string{"br": ".br", "zstd": ".zst", "gzip": ".gz"}

// Validate reports the first invalid option, as "files: ..." errors.
func (o Options) Validate() error {
	for _, name := range o.Index {
		if name == "" || strings.ContainsAny(name, "/\\\x00") || name == "." || name == ".." {
			return fmt.Errorf("files: index %q must be a plain file name", name)
		}
	}
	switch o.Dotfiles {
	case "", DotfilesHide, DotfilesDeny, DotfilesAllow:
	default:
		return fmt.Errorf("files: dotfiles %q: want hide, deny or allow", o.Dotfiles)
	}
	seen := map[string]bool{}
	for _, c := range o.Precompressed {
		if precompressedExt[c] == "" {
			return fmt.Errorf("files: unknown precompressed coding %q (want br, zstd or gzip)", c)
		}
		if seen[c] {
			return fmt.Errorf("files: precompressed coding %q listed twice", c)
		}
		seen[c] = true
	}
	for ext, typ := range o.Types {
		if len(ext) < 2 || ext[0] != '.' || strings.ContainsAny(ext[1:], "./\\") {
			return fmt.Errorf("files: type extension %q must look like \".ext\"", ext)
		}
		if !validMediaType(typ) {
			return fmt.Errorf("files: type %q for %q is not a media type", typ, ext)
		}
	}
	switch {
	case o.MaxAge < 0:
		return errors.New("files: max_age must not be negative")
	case o.MaxAge%time.Second != 0:
		// Cache-Control counts whole seconds (RFC 9111 §1.2.2).
		return fmt.Errorf("files: max_age %v is not a whole number of seconds", o.MaxAge)
	case o.NoCache && o.MaxAge > 0:
		return errors.New("files: no_cache and max_age exclude each other")
	case o.Immutable && o.MaxAge <= 0:
		return errors.New("files: immutable needs max_age")
	}
	if err := checkStripPrefix(o.StripPrefix); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	if err := o.checkTry(); err != nil {
		return fmt.Errorf("files: %w", err)
	}
	if o.MaxRanges < 0 {
		return errors.New("files: max_ranges must not be negative")
	}
	if o.MaxListing < 0 {
		return errors.New("files: max_listing must not be negative")
	}
	return nil
}

// SharedBy returns o for one of n processes serving side by side (a
// master's workers): the cache budgets left zero — MaxMemBytes,
// MaxOpenFiles and MaxEntries — are set to their defaults divided by n
// (at least 1 each), so that n processes hold about what one would. Set
// budgets, and n below 2, leave o as it is.
func (o Options) SharedBy(n int) Options {
	if n < 2 {
		return o
	}
	if o.MaxMemBytes == 0 {
		o.MaxMemBytes = max(1, DefaultMaxMemBytes/int64(n))
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = max(1, DefaultMaxOpenFiles/n)
	}
	if o.MaxEntries == 0 {
		o.MaxEntries = max(1, DefaultMaxEntries/n)
	}
	return o
}

func (o Options) withDefaults() Options {
	if o.Index == nil {
		o.Index = DefaultIndex
	}
	if o.Dotfiles == "" {
		o.Dotfiles = DotfilesHide
	}
	if o.Precompressed == nil {
		o.Precompressed = DefaultPrecompressed
	}
	if o.MaxRanges == 0 {
		o.MaxRanges = DefaultMaxRanges
	}
	if o.MaxListing == 0 {
		o.MaxListing = DefaultMaxListing
	}
	if o.Expiry == 0 {
		o.Expiry = DefaultExpiry
	}
	if o.Expiry < 0 {
		o.Expiry = 0
	}
	if o.OpenExpiry <= 0 {
		o.OpenExpiry = DefaultOpenExpiry
	}
	if o.MaxOpenFiles == 0 {
		o.MaxOpenFiles = DefaultMaxOpenFiles
	}
	if o.MaxMemFile == 0 {
		o.MaxMemFile = DefaultMaxMemFile
	}
	if o.MaxMemBytes <= 0 {
		o.MaxMemBytes = DefaultMaxMemBytes
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	return o
}

// cacheControl returns the Cache-Control value the options ask for, or "".
func (o Options) cacheControl() string {
	switch {
	case o.NoCache:
		return "no-cache"
	case o.MaxAge > 0:
		v := "max-age=" + strconv.FormatInt(int64(o.MaxAge/time.Second), 10)
		if o.Immutable {
			v += ", immutable"
		}
		return v
	}
	return ""
}
