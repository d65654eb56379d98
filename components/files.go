package components

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"

	"github.com/sluice-server/sluice/files"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "files", Kind: KindSource, Scalar: "root", Paths: []string{"root"},
		Example: `files: {root: ./public, browse: true, max_age: 1h}`,
	}, func(o FilesOptions, x Context) (pipe.Component, error) {
		o.Options = o.Options.SharedBy(x.Processes)
		return NewFiles(o)
	})
}

// FilesOptions configures the files source: the directory served, and
// the options of package files, which a config file sets beside root
// (`files: {root: ./public, browse: true}`). A config scalar
// (`files: ./public`) sets Root. The zero value of every other field is a
// sound default; see package files for the behaviour in full.
type FilesOptions struct {
	// Root is the directory served. Required unless FS is set.
	Root string `yaml:"root"`

	// FS, when set, is served instead of Root (an embed.FS, fs.Sub of
	// one). Only Go code can set it.
	FS fs.FS `yaml:"-"`

	files.Options `yaml:",inline"`

	// MemFileMax is the config file's spelling of Options.MaxMemFile:
	// the size up to which a file's content is held in memory (within
	// max_mem_bytes) and leaves with its response's header in one write,
	// larger files being sent with sendfile(2). Default 96KiB
	// (docs/files.md has the measurements behind it); 0 holds no file.
	// Go code may set either; this one, when set, wins.
	MemFileMax *int64 `yaml:"max_mem_file"`

	// MemBytesMax is the config file's spelling of Options.MaxMemBytes:
	// the bytes of file content each process holds in memory. Default
	// 32MiB, divided among a master's workers; a value set here is each
	// worker's; 0 holds no file. Go code may set either; this one, when
	// set, wins.
	MemBytesMax *int64 `yaml:"max_mem_bytes"`
}

// serverOptions returns the options of package files that o asks for.
func (o FilesOptions) serverOptions() files.Options {
	fo := o.Options
	if o.MemFileMax != nil {
		fo.MaxMemFile = *o.MemFileMax
		if fo.MaxMemFile == 0 {
			fo.MaxMemFile = -1
		}
	}
	if o.MemBytesMax != nil {
		if *o.MemBytesMax == 0 {
			fo.MaxMemFile = -1
		} else {
			fo.MaxMemBytes = *o.MemBytesMax
		}
	}
	return fo
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
	switch {
	case opts.MemFileMax != nil && *opts.MemFileMax < 0:
		return nil, errors.New("files: max_mem_file must not be negative (0 holds no file in memory)")
	case opts.MemBytesMax != nil && *opts.MemBytesMax < 0:
		return nil, errors.New("files: max_mem_bytes must not be negative (0 holds no file in memory)")
	}
	fo := opts.serverOptions()
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
			return nil, fmt.Errorf("files: root %s: %w", opts.Root, pe.Err)
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
