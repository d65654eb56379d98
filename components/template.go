package components

import (
	"bytes"
	"errors"
	"fmt"
	"hash/fnv"
	"html/template"
	"io/fs"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sqldata"
)

func init() {
	Register(Registration{
		Name: "template", Kind: KindSource, Scalar: "root", Paths: []string{"root", "file"},
		Example: `template: {root: ./templates, data: {site: Sluice}}`,
	}, func(o TemplateOptions, x Context) (pipe.Component, error) {
		if len(o.Queries) > 0 && x.Database != nil {
			o.Databases = map[string]*sqldata.DB{}
			for _, q := range o.Queries {
				if db, ok := x.Database(q.Database); ok {
					o.Databases[q.Database] = db
				}
			}
		}
		// The shorthand names a directory of templates or one file.
		if x.Shorthand && o.Root != "" {
			if fi, err := os.Stat(o.Root); err == nil && !fi.IsDir() {
				o.File, o.Root = o.Root, ""
			}
		}
		return NewTemplate(o)
	})
}

// TemplateOptions configures a template source (see NewTemplate). Exactly
// one of Root and File is set. In a config file the scalar form
// `template: PATH` sets Root when PATH is a directory and File otherwise.
type TemplateOptions struct {
	// Root is a directory of templates. The request path below Prefix
	// names a page: /about renders about (if it exists), about.html or
	// about/index.html, the first that exists; /blog/ renders
	// blog/index.html. Files whose name (or a directory's on their path)
	// starts with '_' are partials, parsed into every page under their
	// path relative to Root ({{template "_menu.html" .}}) and never
	// served; names starting with '.' are ignored. A path with no page
	// gets 404.
	Root string `yaml:"root"`

	// File is one template rendered for every request: the page of a
	// route with path parameters, such as match: /article/{id:int},
	// which reads them as {{.Param "id"}}.
	File string `yaml:"file"`

	// Prefix is the URL path Root is mounted at, stripped from the request
	// path before it names a page; default "/".
	Prefix string `yaml:"prefix"`

	// Index is the page for a directory; default "index.html".
	Index string `yaml:"index"`

	// Data is static data for the templates, as .Data. It is read, never
	// modified, and must not be modified after NewTemplate.
	Data map[string]any `yaml:"data"`

	// Reload re-parses the templates when their files change: at most
	// once a second a request compares the files' sizes and modification
	// times with those parsed. Without it the templates are parsed once,
	// by NewTemplate. A change that does not parse is logged and the last
	// good templates stay in use.
	Reload bool `yaml:"reload"`

	// MaxSize bounds a rendered page, which is rendered into memory before
	// any of it is sent (so a failing template answers a clean 500, not
	// half a page); a larger page is a 500. Default 8 MiB.
	MaxSize int `yaml:"max_size"`

	// Queries are SQL queries run before the page renders, each
	// request, in the order of their names; a template reads the result
	// of the query NAME as .DB.NAME: the row (a map of column name to
	// value, {{.DB.article.title}}) for a query with One, the list of
	// rows otherwise ({{range .DB.latest}}{{.title}}{{end}}). Like every
	// value, they are escaped by html/template where they land.
	Queries map[string]TemplateQuery `yaml:"queries"`

	// Databases are the data sources Queries name. A config file's are
	// its databases; the caller keeps them open while the Template
	// serves, and closes them.
	Databases map[string]*sqldata.DB `yaml:"-"`

	// Logger receives template errors. Nil means slog.Default().
	Logger *slog.Logger `yaml:"-"`
}

// DefaultTemplateMaxSize is the default TemplateOptions.MaxSize.
const DefaultTemplateMaxSize = 8 << 20

// TemplateData is what a template renders: the request, the time and the
// static data. It is valid only while the page renders.
type TemplateData struct {
	Method     string     // request method, e.g. "GET"
	Path       string     // decoded request path
	Query      url.Values // parsed query string: {{.Query.Get "q"}}
	Host       string     // Host header (or the absolute target's authority)
	RemoteAddr string     // client address, "ip:port"
	Now        time.Time  // when rendering started
	Data       map[string]any
	// DB holds the results of TemplateOptions.Queries by name: a
	// sqldata.Row for a one-row query, a []sqldata.Row otherwise.
	DB map[string]any

	conn *pipe.Conn
	req  *engine.Request
}

// Header returns the request header field name (case-insensitive), or ""
// — in a template, {{.Header "User-Agent"}}.
func (d *TemplateData) Header(name string) string { return string(d.req.Header(name)) }

// Param returns the path parameter name that the route's pattern
// captured (pipe.Conn.Param), or "" — in a template whose route matches
// "/article/{id:int}", {{.Param "id"}}. The value is decoded and may hold
// any byte but '/' and NUL; html/template escapes it like any value.
func (d *TemplateData) Param(name string) string { return d.conn.Param(name) }

// Template is a Source that renders html/template files with the request's
// TemplateData. html/template escapes every value for the context it lands
// in (HTML text, attribute, URL, JavaScript, CSS), so request data such as
// {{.Query.Get "q"}} cannot inject markup or script.
//
// A page is rendered whole into a buffer before anything is sent, with
// Content-Length; an execution error (or a page over MaxSize) is logged
// and answered 500. The Content-Type is text/html; charset=utf-8, unless
// the file's extension names another type (feed.xml, style.css, notes.txt
// are rendered by html/template too, with its HTML escaping). That
// escaping suits HTML and XML only: in a .js, .css or .json template a
// value is escaped as HTML text, which does not keep it inside a string
// of that language (a trailing backslash reaches the next quote), so such
// templates must not print request data.
//
// A Template is safe for concurrent use; parsed templates are shared,
// read-only, by all requests.
type Template struct {
	root    string // Root mode, absolute
	file    string // File mode, absolute
	prefix  string // without its trailing slash
	index   string
	data    map[string]any
	reload  bool
	maxSize int
	log     *slog.Logger
	queries []templateQuery

	set       atomic.Pointer[templateSet]
	nextCheck atomic.Int64 // unix ns of the next file check, with Reload
	checking  sync.Mutex   // one check at a time
}

// templateSet is one parse of the files: immutable once built.
type templateSet struct {
	pages map[string]*template.Template // slash path relative to root → its template set
	sig   uint64                        // the files' names, sizes and times
}

var _ pipe.Component = (*Template)(nil)

// NewTemplate checks opts and parses the templates; a template that does
// not parse is an error naming its file and line.
func NewTemplate(opts TemplateOptions) (pipe.Component, error) {
	tp := &Template{
		prefix:  strings.TrimSuffix(opts.Prefix, "/"),
		index:   opts.Index,
		data:    opts.Data,
		reload:  opts.Reload,
		maxSize: opts.MaxSize,
		log:     opts.Logger,
	}
	if tp.index == "" {
		tp.index = "index.html"
	}
	if strings.ContainsAny(tp.index, "/\\") {
		return nil, fmt.Errorf("template: index %q must be a file name", opts.Index)
	}
	if tp.maxSize <= 0 {
		tp.maxSize = DefaultTemplateMaxSize
	}
	if tp.log == nil {
		tp.log = slog.Default()
	}
	if opts.Prefix != "" && opts.Prefix[0] != '/' {
		return nil, fmt.Errorf("template: prefix %q must start with /", opts.Prefix)
	}
	switch {
	case opts.Root != "" && opts.File != "":
		return nil, errors.New("template: set root or file, not both")
	case opts.Root != "":
		abs, err := filepath.Abs(opts.Root)
		if err != nil {
			return nil, fmt.Errorf("template: root %q: %v", opts.Root, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("template: root: %w", err)
		}
		if !fi.IsDir() {
			return nil, fmt.Errorf("template: root %q is not a directory", opts.Root)
		}
		tp.root = abs
	case opts.File != "":
		abs, err := filepath.Abs(opts.File)
		if err != nil {
			return nil, fmt.Errorf("template: file %q: %v", opts.File, err)
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return nil, fmt.Errorf("template: file: %w", err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("template: file %q is not a regular file", opts.File)
		}
		tp.file = abs
	default:
		return nil, errors.New("template: set root or file")
	}
	queries, err := buildQueries(opts)
	if err != nil {
		return nil, err
	}
	tp.queries = queries
	files, sig, err := tp.scan()
	if err != nil {
		return nil, fmt.Errorf("template: %v", err)
	}
	set, err := tp.parse(files, sig)
	if err != nil {
		return nil, err
	}
	tp.set.Store(set)
	tp.nextCheck.Store(time.Now().Add(time.Second).UnixNano())
	return tp, nil
}

// templateFile is one file found by scan.
type templateFile struct {
	rel  string // slash path relative to root (the base name in File mode)
	path string // file system path
}

// scan lists the template files and their signature: a hash of their
// names, sizes and modification times.
func (tp *Template) scan() ([]templateFile, uint64, error) {
	h := fnv.New64a()
	note := func(rel string, fi fs.FileInfo) {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", rel, fi.Size(), fi.ModTime().UnixNano())
	}
	if tp.file != "" {
		fi, err := os.Stat(tp.file)
		if err != nil {
			return nil, 0, err
		}
		rel := filepath.Base(tp.file)
		note(rel, fi)
		return []templateFile{{rel, tp.file}}, h.Sum64(), nil
	}
	var files []templateFile
	err := filepath.WalkDir(tp.root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == tp.root {
			return nil
		}
		if strings.HasPrefix(d.Name(), ".") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		fi, err := os.Stat(p) // follows a symbolic link
		if err != nil || !fi.Mode().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(tp.root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		note(rel, fi)
		files = append(files, templateFile{rel, p})
		return nil
	})
	return files, h.Sum64(), err
}

// parse builds a template set from files: partials first, shared by every
// page, then each page in its own clone so pages may define blocks of the
// same name.
func (tp *Template) parse(files []templateFile, sig uint64) (*templateSet, error) {
	base := template.New("")
	var pages []templateFile
	for _, f := range files {
		if !tp.isPartial(f.rel) {
			pages = append(pages, f)
			continue
		}
		if err := parseInto(base, f); err != nil {
			return nil, err
		}
	}
	set := &templateSet{pages: make(map[string]*template.Template, len(pages)), sig: sig}
	for _, f := range pages {
		t, err := base.Clone()
		if err != nil {
			return nil, fmt.Errorf("template: %v", err)
		}
		if err := parseInto(t, f); err != nil {
			return nil, err
		}
		set.pages[f.rel] = t
	}
	return set, nil
}

// isPartial reports whether a file is a partial: in Root mode, one with a
// name (or a directory on its path) starting with '_'.
func (tp *Template) isPartial(rel string) bool {
	if tp.root == "" {
		return false
	}
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, "_") {
			return true
		}
	}
	return false
}

func parseInto(t *template.Template, f templateFile) error {
	b, err := os.ReadFile(f.path)
	if err != nil {
		return fmt.Errorf("template: %w", err)
	}
	if _, err := t.New(f.rel).Parse(string(b)); err != nil {
		return err // "template: about.html:3: ..." names the file and line
	}
	return nil
}

// maybeReload re-parses the templates if Reload is set, a check is due at
// now, and the files changed.
func (tp *Template) maybeReload(now time.Time) {
	if !tp.reload || now.UnixNano() < tp.nextCheck.Load() || !tp.checking.TryLock() {
		return
	}
	defer tp.checking.Unlock()
	if now.UnixNano() < tp.nextCheck.Load() {
		return // another request just checked
	}
	tp.nextCheck.Store(now.Add(time.Second).UnixNano())
	files, sig, err := tp.scan()
	old := tp.set.Load()
	if err != nil {
		tp.log.Error("template: cannot list templates", "err", err)
		return
	}
	if sig == old.sig {
		return
	}
	set, err := tp.parse(files, sig)
	if err != nil {
		tp.log.Error("template: reload failed; serving the last good templates", "err", err)
		// Remember the failed files so they are not parsed again every
		// second until they change.
		tp.set.Store(&templateSet{pages: old.pages, sig: sig})
		return
	}
	tp.set.Store(set)
}

// page finds the template for a request path.
func (tp *Template) page(set *templateSet, p string) (string, *template.Template) {
	if tp.file != "" {
		rel := filepath.Base(tp.file)
		return rel, set.pages[rel]
	}
	if tp.prefix != "" {
		if p != tp.prefix && !strings.HasPrefix(p, tp.prefix+"/") {
			return "", nil
		}
		p = p[len(tp.prefix):]
	}
	dir := p == "" || strings.HasSuffix(p, "/")
	rel := strings.TrimPrefix(path.Clean("/"+p), "/")
	for _, seg := range strings.Split(rel, "/") {
		if strings.HasPrefix(seg, ".") || strings.HasPrefix(seg, "_") {
			return "", nil
		}
	}
	var candidates []string
	switch {
	case rel == "":
		candidates = []string{tp.index}
	case dir:
		candidates = []string{rel + "/" + tp.index}
	default:
		candidates = []string{rel, rel + ".html", rel + "/" + tp.index}
	}
	for _, name := range candidates {
		if t := set.pages[name]; t != nil {
			return name, t
		}
	}
	return "", nil
}

// templateBufs recycles render buffers.
var templateBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// errTemplateTooLarge stops a render that grows past MaxSize.
var errTemplateTooLarge = errors.New("page larger than max_size")

// templateLimit is the bounded writer a page renders into.
type templateLimit struct {
	buf *bytes.Buffer
	max int
}

func (l *templateLimit) Write(p []byte) (int, error) {
	if l.buf.Len()+len(p) > l.max {
		return 0, errTemplateTooLarge
	}
	return l.buf.Write(p)
}

// Handle renders the request's page (404 when there is none; 500 when it
// fails) and sets it as the content.
func (tp *Template) Handle(c *pipe.Conn) bool {
	now := time.Now()
	tp.maybeReload(now)
	r := c.Request
	name, t := tp.page(tp.set.Load(), string(r.Path))
	if t == nil {
		return c.Error(http.StatusNotFound, "no such page")
	}
	query, _ := url.ParseQuery(string(r.Query)) // keeps what parses
	data := &TemplateData{
		Method: string(r.Method),
		Path:   string(r.Path),
		Query:  query,
		Host:   string(r.Host),
		Now:    now,
		Data:   tp.data,
		conn:   c,
		req:    r,
	}
	if r.RemoteAddr != nil {
		data.RemoteAddr = r.RemoteAddr.String()
	}
	if len(tp.queries) > 0 && !tp.runQueries(c, data) {
		return false
	}
	buf := templateBufs.Get().(*bytes.Buffer)
	buf.Reset()
	if err := t.ExecuteTemplate(&templateLimit{buf, tp.maxSize}, name, data); err != nil {
		templatePut(buf)
		tp.log.Error("template: render failed", "page", name, "path", data.Path, "err", err, c.RequestIDAttr())
		return c.Error(http.StatusInternalServerError, "the page could not be rendered")
	}
	h := c.Header()
	h.Set("Content-Type", templateType(name))
	h.SetContentLength(int64(buf.Len()))
	c.SetContent(func(w pipe.Writer) error {
		_, err := w.Write(buf.Bytes())
		templatePut(buf)
		return err
	})
	return true
}

func templatePut(b *bytes.Buffer) {
	if b.Cap() <= 256<<10 {
		templateBufs.Put(b)
	}
}

// templateType is the Content-Type for a template file's name.
func templateType(name string) string {
	ext := strings.ToLower(path.Ext(name))
	switch ext {
	case "", ".html", ".htm", ".tmpl", ".gohtml", ".tpl":
		return "text/html; charset=utf-8"
	}
	t := mime.TypeByExtension(ext)
	if t == "" {
		return "text/html; charset=utf-8"
	}
	if strings.HasPrefix(t, "text/") && !strings.Contains(t, "charset") {
		t += "; charset=utf-8"
	}
	return t
}
