package components

import (
	"errors"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
)

// FilesOptions configures the files source. A config scalar
// (`files: ./public`) sets Root. The zero value of every other field is a
// sound default; see package files for the behaviour in full.
type FilesOptions struct {
	// Root is the directory served. Required unless FS is set.
	Root string `yaml:"root"`

	// FS, when set, is served instead of Root (an embed.FS, fs.Sub of
	// one). Only Go code can set it.
	FS fs.FS `yaml:"-"`

	// Index lists the files tried, in order, for a path ending in "/".
	// Default [index.html]; an empty list means none.
	Index []string `yaml:"index"`

	// Browse lists directories without an index file: HTML, or JSON for
	// clients that prefer application/json; sort with
	// ?sort=name|size|time&order=asc|desc. Default off (404).
	Browse bool `yaml:"browse"`

	// MaxListing bounds the entries a listing shows, and so its memory:
	// the first in the order asked for, with a note in the HTML page.
	// Default 10000.
	MaxListing int `yaml:"max_listing"`

	// Dotfiles is "hide" (default: 404, as if missing), "deny" (403) or
	// "allow". /.well-known/ is always served.
	Dotfiles string `yaml:"dotfiles"`

	// FollowSymlinks serves symbolic links that lead out of Root. UNSAFE:
	// whoever can create a link in the tree can publish any file the
	// server can read. Default off: links are followed only inside Root.
	FollowSymlinks bool `yaml:"follow_symlinks"`

	// Types maps extensions to media types, before the built-in table
	// and /etc/mime.types: {".md": "text/markdown"}. Text types get
	// charset=utf-8.
	Types map[string]string `yaml:"types"`

	// NoSniff sends "X-Content-Type-Options: nosniff" with files.
	NoSniff bool `yaml:"nosniff"`

	// Precompressed lists the codings of precompressed files served from
	// beside the original (a.css.br, a.css.zst, a.css.gz) to clients that
	// accept them, preferred first. Default [br, zstd, gzip]; [] turns it
	// off.
	Precompressed []string `yaml:"precompressed"`

	// MaxAge sends "Cache-Control: max-age=N" and an Expires field: a
	// duration of whole seconds such as 1h or 720h.
	MaxAge time.Duration `yaml:"max_age"`

	// Immutable adds "immutable" to Cache-Control (needs MaxAge): for
	// fingerprinted assets that never change under their name.
	Immutable bool `yaml:"immutable"`

	// NoCache sends "Cache-Control: no-cache": caches revalidate every
	// time. It excludes MaxAge.
	NoCache bool `yaml:"no_cache"`

	// StripPrefix is removed from the request path before it is mapped
	// to a file: with /static, /static/a.css is ROOT/a.css.
	StripPrefix string `yaml:"strip_prefix"`

	// MaxRanges bounds the byte ranges one request may ask for (after
	// merging overlapping ones); more get the whole file. Default 16.
	MaxRanges int `yaml:"max_ranges"`

	// Expiry is how long file metadata and small files' content are
	// cached before the file system is asked again: a changed file is
	// served within Expiry. Default 1s.
	Expiry time.Duration `yaml:"expiry"`
}

// Files is the files source: it answers GET and HEAD with the file the
// request path names under its root (200, 206 for ranges, 304 and 412
// for conditional requests, 301 for a directory without its slash, 403,
// 404, 416), OPTIONS with 204 and other methods with 405 and Allow. In
// the setup phase it sets the status and header fields — filters after
// it see the final Content-Type, Content-Length, ETag and
// Content-Encoding (a precompressed variant) — and its content writes the
// body, with sendfile(2) when no filter transforms it.
//
// A Files is safe for concurrent use. Per request it holds no open file
// between the setup and content phases, so a pipeline that never runs the
// content (a later source replaced it) leaks nothing.
type Files struct {
	srv *files.Server
}

var _ pipe.Component = (*Files)(nil)

// NewFiles returns the files source (a *Files) for opts. It fails for a
// missing or unreadable Root and for invalid options, with errors such as
// `files: dotfiles "show": want hide, deny or allow`.
func NewFiles(opts FilesOptions) (pipe.Component, error) {
	fo := files.Options{
		Index:          opts.Index,
		Browse:         opts.Browse,
		MaxListing:     opts.MaxListing,
		Dotfiles:       opts.Dotfiles,
		FollowSymlinks: opts.FollowSymlinks,
		Types:          opts.Types,
		NoSniff:        opts.NoSniff,
		Precompressed:  opts.Precompressed,
		MaxAge:         opts.MaxAge,
		Immutable:      opts.Immutable,
		NoCache:        opts.NoCache,
		StripPrefix:    opts.StripPrefix,
		MaxRanges:      opts.MaxRanges,
		Expiry:         opts.Expiry,
	}
	if err := fo.Validate(); err != nil {
		return nil, err
	}
	if opts.FS != nil {
		return &Files{srv: files.NewFS(opts.FS, fo)}, nil
	}
	if opts.Root == "" {
		return nil, errors.New("files: no root directory")
	}
	srv, err := files.New(opts.Root, fo)
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, errors.New("files: root " + opts.Root + ": " + pe.Err.Error())
		}
		return nil, err
	}
	return &Files{srv: srv}, nil
}

// Handle decides the response to c's request and sets its status, header
// and content. It always returns true: a later component may still
// act (a filter registers, another source replaces the content).
func (f *Files) Handle(c *pipe.Conn) bool {
	b := filesBodyPool.Get().(*filesBody)
	f.srv.Decide(&b.rp, c.Request)
	b.rp.SetHeader(c.Header())
	c.SetStatus(b.rp.Status())
	if !b.rp.HasBody() {
		b.rp = files.Reply{}
		filesBodyPool.Put(b)
		c.SetContent(nil)
		return true
	}
	c.SetContent(b.content)
	return true
}

// Close releases the root directory and the files kept open. Requests
// after Close fail. The pipeline must no longer be served.
func (f *Files) Close() error { return f.srv.Close() }

// filesBody carries a decided reply to the content phase. Pooled with its
// content function made once, so a request allocates nothing for it.
type filesBody struct {
	rp      files.Reply
	w       filesWriter
	content pipe.Content
}

var filesBodyPool sync.Pool

func init() {
	filesBodyPool.New = func() any {
		b := &filesBody{}
		b.content = func(w pipe.Writer) error {
			b.w.w = w
			err := b.rp.Send(&b.w)
			b.rp, b.w.w = files.Reply{}, nil
			filesBodyPool.Put(b)
			return err
		}
		return b
	}
}

// filesWriter is a files.BodyWriter over a pipe.Writer: file regions go
// through pipe.SendFile, which uses sendfile(2) when no filter applies.
type filesWriter struct{ w pipe.Writer }

func (w *filesWriter) Write(p []byte) (int, error) { return w.w.Write(p) }

func (w *filesWriter) SendFile(f *os.File, offset, n int64) error {
	return pipe.SendFile(w.w, f, offset, n)
}
