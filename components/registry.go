package components

import (
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"strings"

	"github.com/sluice-server/sluice/pipe"
)

// Kind is the part a component plays in a pipeline (the webpipes
// classification).
type Kind uint8

// The kinds of component.
const (
	// KindPipe inspects or routes the request and may answer it and stop
	// the pipeline (log, basic_auth, ipfilter, redirect).
	KindPipe Kind = iota + 1
	// KindSource produces the response body (files, text, cgi).
	KindSource
	// KindFilter transforms the body a source produced (compress, rot13).
	KindFilter
)

// String returns "pipe", "source" or "filter".
func (k Kind) String() string {
	switch k {
	case KindPipe:
		return "pipe"
	case KindSource:
		return "source"
	case KindFilter:
		return "filter"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Context is what a component built from a config file may take from the
// server around it rather than from its options.
type Context struct {
	// Logger receives the components' errors: Build gives it to every
	// component whose options have a Logger field left nil. Nil means
	// slog.Default().
	Logger *slog.Logger

	// Conns reports the server's open connections (the status page shows
	// them). Nil leaves them unknown.
	Conns func() int

	// Workers reports the worker processes of the master this process
	// is a worker of (the status page shows them); nil when it is none.
	Workers func() Workers

	// Shorthand is set by Build when the options came from a scalar or
	// list argument (`name: argument`) rather than a map.
	Shorthand bool
}

// Registration describes a component a config file can name: how its
// options are decoded and how it is built. Registrations are immutable;
// Lookup and All return shared pointers that must not be modified.
type Registration struct {
	// Name is the component's name in a pipeline ("files", "basic_auth").
	Name string

	// Kind is the component's part in a pipeline.
	Kind Kind

	// Scalar is the option (its yaml key) that a scalar or list argument
	// sets: `files: ./public` sets root. Empty when the component takes
	// its options as a map only.
	Scalar string

	// Paths lists the options (yaml keys) naming files or directories. A
	// config file's relative paths are relative to the file's directory.
	Paths []string

	// Answers reports that the component answers every request and ends
	// the pipeline (redirect): a route ending with it needs no source.
	Answers bool

	// Stops is the response a pipe may answer with when it ends the
	// pipeline early ("401" for basic_auth), or empty if it never does.
	Stops string

	// Example is an example pipeline entry in YAML, for the docs.
	Example string

	// Options is the options struct type (FilesOptions, TextOptions…),
	// whose yaml tags name the keys a config file may set.
	Options reflect.Type

	build func(decode func(opts any) error, x *Context) (pipe.Component, error)
}

// Build makes the component: decode fills the options struct (a pointer
// to a zero value of r.Options) from the config file, then Build adds
// what the server provides from x and calls the component's constructor.
// An error from decode is returned as is and the constructor is not
// called.
func (r *Registration) Build(decode func(opts any) error, x Context) (pipe.Component, error) {
	return r.build(decode, &x)
}

// entry registers a component with constructor fn. setup, if not nil,
// fills the options a config file cannot set (loggers, counters) once
// the file's options are decoded.
func entry[O any](name string, kind Kind, scalar string, fn func(O) (pipe.Component, error), setup func(o *O, x *Context)) *Registration {
	return &Registration{
		Name:    name,
		Kind:    kind,
		Scalar:  scalar,
		Options: reflect.TypeFor[O](),
		build: func(decode func(any) error, x *Context) (pipe.Component, error) {
			var o O
			if err := decode(&o); err != nil {
				return nil, err
			}
			if setup != nil {
				setup(&o, x)
			}
			giveLogger(reflect.ValueOf(&o).Elem(), x.Logger)
			return fn(o)
		},
	}
}

// giveLogger sets the field Logger of the options struct o, if it has one
// of type *slog.Logger left nil, to l.
func giveLogger(o reflect.Value, l *slog.Logger) {
	if l == nil || o.Kind() != reflect.Struct {
		return
	}
	f := o.FieldByName("Logger")
	if f.IsValid() && f.CanSet() && f.Type() == reflect.TypeFor[*slog.Logger]() && f.IsNil() {
		f.Set(reflect.ValueOf(l))
	}
}

func (r *Registration) paths(keys ...string) *Registration { r.Paths = keys; return r }
func (r *Registration) answers() *Registration             { r.Answers = true; return r }
func (r *Registration) stops(resp string) *Registration    { r.Stops = resp; return r }
func (r *Registration) example(yaml string) *Registration  { r.Example = yaml; return r }

// registry is every component a config file can name.
var registry = []*Registration{
	// Sources.
	entry("files", KindSource, "root", NewFiles, nil).paths("root").
		example(`files: {root: ./public, browse: true, max_age: 1h}`),
	entry("text", KindSource, "body", NewText, nil).
		example(`text: "Hello, world!\n"`),
	entry("echo", KindSource, "format", NewEcho, nil).
		example(`echo: json`),
	entry("status", KindSource, "format", NewStatus, func(o *StatusOptions, x *Context) {
		o.Conns, o.Workers = x.Conns, x.Workers
	}).example(`status: {format: json}`),
	entry("cgi", KindSource, "script", NewCGI, func(o *CGIOptions, x *Context) {
		o.Logger = x.Logger
	}).paths("script", "dir", "doc_root").
		example(`cgi: {dir: ./cgi-bin, prefix: /cgi-bin/, timeout: 10s}`),
	entry("template", KindSource, "root", NewTemplate, func(o *TemplateOptions, x *Context) {
		o.Logger = x.Logger
		// The shorthand names a directory of templates or one file.
		if x.Shorthand && o.Root != "" {
			if fi, err := os.Stat(o.Root); err == nil && !fi.IsDir() {
				o.File, o.Root = o.Root, ""
			}
		}
	}).paths("root", "file").
		example(`template: {root: ./templates, data: {site: Sluice}}`),

	// Filters.
	entry("compress", KindFilter, "encodings", NewCompress, nil).
		example(`compress: [zstd, br, gzip]`),
	entry("rot13", KindFilter, "", NewRot13, nil).
		example(`rot13`),

	// Pipes.
	entry("log", KindPipe, "file", NewLog, nil).paths("file").
		example(`log: {file: ./access.log, format: json}`),
	entry("redirect", KindPipe, "to", NewRedirect, nil).answers().stops("3xx").
		example(`redirect: {to: "https://example.com$path$query", status: 308}`),
	entry("headers", KindPipe, "", NewHeaders, nil).
		example(`headers: {set: {Cache-Control: "max-age=3600"}, remove: [X-Powered-By]}`),
	entry("count", KindPipe, "", NewCount, nil).
		example(`count`),
	entry("basic_auth", KindPipe, "htpasswd", NewBasicAuth, nil).paths("htpasswd").stops("401").
		example(`basic_auth: {realm: private, htpasswd: ./users.htpasswd}`),
	entry("ipfilter", KindPipe, "allow", NewIPFilter, nil).stops("403").
		example(`ipfilter: {allow: [10.0.0.0/8, 192.168.0.0/16], deny: [10.6.0.0/16]}`),
	entry("htaccess", KindPipe, "root", NewHtaccess, nil).paths("root").stops("403").
		example(`htaccess: ./public`),
	entry("ratelimit", KindPipe, "rate", NewRateLimit, nil).stops("429").
		example(`ratelimit: {rate: 10, burst: 20}`),
}

var byName = func() map[string]*Registration {
	m := make(map[string]*Registration, len(registry))
	for _, r := range registry {
		if m[r.Name] != nil {
			panic("components: " + r.Name + " registered twice")
		}
		m[r.Name] = r
	}
	return m
}()

// Lookup returns the registration of the component called name.
func Lookup(name string) (*Registration, bool) {
	r, ok := byName[name]
	return r, ok
}

// All returns every registered component, sorted by name.
func All() []*Registration {
	all := append([]*Registration(nil), registry...)
	sort.Slice(all, func(i, j int) bool { return all[i].Name < all[j].Name })
	return all
}

// Names returns the names of the registered components, sorted.
func Names() []string {
	var names []string
	for _, r := range All() {
		names = append(names, r.Name)
	}
	return names
}

// OptionKey returns the yaml key of an options struct field: its yaml tag
// name, or the lower-cased field name when the tag gives none, or "" for
// a field a config file cannot set (tagged "-" or unexported).
func OptionKey(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return ""
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}
