package components

import (
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/sluice-server/sluice/metrics"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sqldata"
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

	// Metrics returns the metrics of every worker process of the master
	// this process is a worker of, its own included, each with its
	// Worker id, for the status page's Prometheus format; nil (the
	// process's own metrics.Default alone) when it is none.
	Metrics func() []metrics.Snapshot

	// Processes is how many processes serve the config side by side (a
	// master's workers): components that cache divide their default
	// budgets by it (files: files.Options.SharedBy). 0 or 1: this process
	// alone.
	Processes int

	// Database returns the data source of the config's databases called
	// name, for the components that query one (template); nil for a
	// config with none. The config owns the data sources: it closes them
	// when it is retired.
	Database func(name string) (*sqldata.DB, bool)

	// Databases are every data source of the config's databases, by
	// name, for a page that shows their load (status); it is read-only.
	// A component that queries one asks Database instead.
	Databases map[string]*sqldata.DB

	// Caches are the caches of the config, for the components that
	// show or purge them (status, cache_purge); the cache component adds
	// each one it builds. Nil: a cache is built without joining a set,
	// and status and cache_purge see none.
	Caches *Caches

	// Place is where the entry is in the config: the host of its site
	// or route and its route's first match ("example.com/api/", "/api/",
	// "~ ^/u/"), with "#2", "#3"… after it for the second and later
	// routes with the same. proxy, fastcgi and php name the live set of
	// their upstreams by it when their entry has no name option. Empty
	// outside a route.
	Place string

	// Shorthand is set by Build when the options came from a scalar or
	// list argument (`name: argument`) rather than a map.
	Shorthand bool
}

// Registration describes a component a config file can name: how its
// options are decoded and how it is built. Registrations are immutable
// once registered; Lookup and All return shared pointers that must not be
// modified.
type Registration struct {
	// Name is the component's name in a pipeline ("files", "basic_auth"):
	// a lower-case letter, then lower-case letters, digits and
	// underscores.
	Name string

	// Kind is the component's part in a pipeline.
	Kind Kind

	// Scalar is the option (its yaml key) that a scalar or list argument
	// sets: `files: ./public` sets root. Empty when the component takes
	// its options as a map only.
	Scalar string

	// Paths lists the options (yaml keys of string fields) naming files or
	// directories. A config file's relative paths are relative to the
	// file's directory. A key of an option within an option of struct
	// type (or pointer to struct) is written with a dot:
	// "redis.password_file".
	Paths []string

	// Answers reports that the component answers every request and ends
	// the pipeline (redirect): a route ending with it needs no source.
	// Only a pipe may answer every request.
	Answers bool

	// Stops is the response a pipe may answer with when it ends the
	// pipeline early ("401" for basic_auth), or empty if it never does.
	// sluice check --explain and sluice graph show it.
	Stops string

	// Example is an example pipeline entry in YAML, for the docs
	// (`files: {root: ./public}`).
	Example string

	// Options is the options struct type (FilesOptions, TextOptions…),
	// whose yaml tags name the keys a config file may set (see
	// OptionFields). Register sets it.
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

// Register adds a component that config files can name, as Caddy's
// modules are added: each built-in component calls it from an init
// function of its own file, and a Go program that embeds Sluice calls it
// from an init function of the package that holds its component, before
// it loads a config. r describes the component; build makes one from the
// options a config file set, decoded into an O (a struct whose yaml tags
// name the keys, as for the built-in components), and from what the
// server provides in x. Build may return an error, which config reports
// at the entry naming the component, prefixed with its name.
//
// A config file's entry for the component is decoded as a built-in's is:
// unknown keys and values of the wrong type are errors at their line and
// column, the Scalar option takes a scalar argument, the Paths options
// are resolved against the config file's directory, and an options field
// `Logger *slog.Logger` left nil receives x.Logger. sluice check
// --explain and sluice graph show the component like any other.
//
// Register panics, with a message naming the component, when the
// registration is invalid: a name not made of a lower-case letter then
// lower-case letters, digits and underscores, or one already registered
// (a built-in's included); a Kind that is not KindPipe, KindSource or
// KindFilter; Answers on a kind other than KindPipe; O not a struct; a
// Scalar that is not a key of O, or a Paths entry that is not a key of a
// string field of O; a nil build.
//
// Register is safe for concurrent use, and may be called at any time: a
// config parsed after it returns can name the component, one parsed
// before cannot. A registration cannot be removed or replaced.
func Register[O any](r Registration, build func(opts O, x Context) (pipe.Component, error)) {
	if build == nil {
		panic("components: Register of " + strconv.Quote(r.Name) + " with a nil build function")
	}
	r.Paths = slices.Clone(r.Paths)
	r.Options = reflect.TypeFor[O]()
	r.build = func(decode func(any) error, x *Context) (pipe.Component, error) {
		var o O
		if err := decode(&o); err != nil {
			return nil, err
		}
		giveLogger(reflect.ValueOf(&o).Elem(), x.Logger)
		return build(o, *x)
	}
	register(&r)
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

// The registry: every component a config file can name, and the stores
// of ratelimit's buckets. Each built-in component registers itself with
// Register from an init function of its own file, as a program's
// components do; package ratelimit/redisstore registers its store with
// RegisterRateStore.
var (
	registryMu sync.RWMutex
	byName     = map[string]*Registration{}
	rateStores = map[string]OpenRedisFunc{}
)

// RegisterRateStore adds a store that ratelimit can keep its buckets in:
// open opens it for a ratelimit entry whose option name is set. The one
// such option is redis (RateLimitRedis): package
// github.com/sluice-server/sluice/ratelimit/redisstore registers open
// for it from its init function, and the sluice program imports that
// package; a program that embeds Sluice imports it too to let its
// configs use the redis option, which is otherwise an error. The Redis
// client lives there, not here, so that programs embedding these
// components do not link a Redis client they do not use.
//
// RegisterRateStore panics, as Register does, when name is not a
// lower-case letter then lower-case letters, digits and underscores, when
// a store of that name is already registered, or when open is nil. It is
// safe for concurrent use; a store cannot be removed or replaced.
func RegisterRateStore(name string, open OpenRedisFunc) {
	if !validName(name) {
		panic("components: cannot register the rate store " + strconv.Quote(name) + ": a name is a lower-case letter, then lower-case letters, digits and underscores")
	}
	if open == nil {
		panic("components: RegisterRateStore of " + strconv.Quote(name) + " with a nil open function")
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if rateStores[name] != nil {
		panic("components: cannot register the rate store " + strconv.Quote(name) + ": a store of that name is already registered")
	}
	rateStores[name] = open
}

// rateStore returns the opener of the rate store called name, or nil.
func rateStore(name string) OpenRedisFunc {
	registryMu.RLock()
	defer registryMu.RUnlock()
	return rateStores[name]
}

// register checks r and adds it to the registry, or panics.
func register(r *Registration) {
	if err := r.check(); err != nil {
		panic("components: cannot register " + strconv.Quote(r.Name) + ": " + err.Error())
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if byName[r.Name] != nil {
		panic("components: cannot register " + strconv.Quote(r.Name) + ": a component of that name is already registered")
	}
	byName[r.Name] = r
}

// check reports what makes r unusable by config files.
func (r *Registration) check() error {
	if !validName(r.Name) {
		return errors.New("a name is a lower-case letter, then lower-case letters, digits and underscores")
	}
	switch {
	case r.Kind < KindPipe || r.Kind > KindFilter:
		return fmt.Errorf("kind %v is not KindPipe, KindSource or KindFilter", r.Kind)
	case r.Answers && r.Kind != KindPipe:
		return fmt.Errorf("a %v cannot answer every request: only a pipe can", r.Kind)
	case r.Options.Kind() != reflect.Struct:
		return fmt.Errorf("options type %v is not a struct", r.Options)
	}
	fields := OptionFields(r.Options)
	key := func(k string) (OptionField, bool) {
		for _, f := range fields {
			if f.Key == k {
				return f, true
			}
		}
		return OptionField{}, false
	}
	if _, ok := key(r.Scalar); r.Scalar != "" && !ok {
		return fmt.Errorf("scalar option %q is not an option of %v", r.Scalar, r.Options)
	}
	for _, p := range r.Paths {
		if f, ok := OptionPath(r.Options, p); !ok || f.Field.Type.Kind() != reflect.String {
			return fmt.Errorf("path option %q is not a string option of %v", p, r.Options)
		}
	}
	return nil
}

// OptionPath finds the option key of the options struct type t, where a
// key with dots names an option within options of struct type or pointer
// to struct type ("redis.password_file"). It returns the innermost
// option, whose Index is relative to the struct that holds it.
func OptionPath(t reflect.Type, key string) (OptionField, bool) {
	for {
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return OptionField{}, false
		}
		first, rest, nested := strings.Cut(key, ".")
		var f OptionField
		var ok bool
		for _, g := range OptionFields(t) {
			if g.Key == first {
				f, ok = g, true
				break
			}
		}
		if !ok || !nested {
			return f, ok
		}
		t, key = f.Field.Type, rest
	}
}

// validName reports whether name is a lower-case letter followed by
// lower-case letters, digits and underscores.
func validName(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || i > 0 && ('0' <= c && c <= '9' || c == '_')) {
			return false
		}
	}
	return name != ""
}

// Lookup returns the registration of the component called name.
func Lookup(name string) (*Registration, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	r, ok := byName[name]
	return r, ok
}

// All returns every registered component, the built-in ones and those
// added with Register, sorted by name.
func All() []*Registration {
	registryMu.RLock()
	all := slices.Collect(maps.Values(byName))
	registryMu.RUnlock()
	slices.SortFunc(all, func(a, b *Registration) int { return strings.Compare(a.Name, b.Name) })
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

// OptionField is an option a config file may set: a field of an options
// struct.
type OptionField struct {
	// Key is the option's yaml key.
	Key string
	// Index is the field's index sequence, for reflect.Value.FieldByIndex.
	Index []int
	// Field is the struct field, as declared (in an embedded struct for
	// the fields it brings).
	Field reflect.StructField
}

// OptionFields lists the options of the options struct type t, in the
// order of its fields: every exported field but those tagged `yaml:"-"`,
// under its yaml tag's name or else its name in lower case. The fields of
// an embedded struct tagged `yaml:",inline"` are listed in its place, as
// if they were t's own (FilesOptions embeds files.Options so).
func OptionFields(t reflect.Type) []OptionField {
	var out []OptionField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("yaml")
		name, flags, _ := strings.Cut(tag, ",")
		if f.Anonymous && f.Type.Kind() == reflect.Struct && slices.Contains(strings.Split(flags, ","), "inline") {
			for _, sub := range OptionFields(f.Type) {
				sub.Index = append([]int{i}, sub.Index...)
				out = append(out, sub)
			}
			continue
		}
		if !f.IsExported() || tag == "-" {
			continue
		}
		if name == "" {
			name = strings.ToLower(f.Name)
		}
		out = append(out, OptionField{Key: name, Index: []int{i}, Field: f})
	}
	return out
}
