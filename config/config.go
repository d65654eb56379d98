package config

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/requestid"
	"github.com/sluice-server/sluice/sqldata"
	"github.com/sluice-server/sluice/tracing"
)

// defaultRequestID is the request ID stage of a file without request_id:
// IDs made for every request, no received one believed.
var defaultRequestID = func() *requestid.Stage {
	s, err := requestid.New(requestid.Options{})
	if err != nil {
		panic(err)
	}
	return s
}()

// Config is a config file read, checked and built: the server settings
// and the routes with their components constructed, ready to serve.
// Close releases what the components hold (open directories, log files).
type Config struct {
	// File is the config file's name as given to Load or Parse.
	File string

	// Files are the files read: File, then those it includes (see
	// IncludedKeys), in the order first read, each named as its includer's
	// directory joined with the path written. A reload reads them all
	// again.
	Files []string

	// Listen lists the addresses to listen on, in the order written.
	Listen []Address

	// ListenOptions holds the options of the listen entries written as
	// maps ({address: ":8443", tls: ...}), by address; an address written
	// as a plain string has none, and is served as plain HTTP/1.1.
	ListenOptions map[Address]*ListenOptions

	// Workers is the number of worker processes a master starts (see
	// package daemon/supervisor): 0, the default, serves in one process
	// with no master; WorkersAuto starts one per CPU.
	Workers int

	// Health bounds how the master checks its workers; zero fields take
	// their defaults (DefaultHealthInterval, DefaultHealthTimeout).
	Health Health

	// DrainTimeout bounds how long a worker that a reload or a binary
	// upgrade replaced keeps serving the connections it holds (tunnels,
	// event streams, long downloads) before they are cut; zero means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration

	// DrainMaxMemory bounds the resident memory of all the workers
	// draining at once: over it, the master ends the oldest drain (its
	// connections get the grace period). Zero means a quarter of the
	// machine's memory (see the master).
	DrainMaxMemory int64

	// Limits are the engine's limits; fields the file does not set are
	// zero (the engine's defaults).
	Limits engine.Limits

	// LimitsSet lists the limits keys the file sets, in the order written.
	LimitsSet []string

	// Log configures the server's error log.
	Log Log

	// AccessLog is the server-wide access log (the file's access_log): a
	// log component, built with components.LogOptions.ServerWide, that
	// Handler runs before the router. Nil when the file sets none.
	AccessLog *Stage

	// ErrorPages are the server-wide error pages (the file's
	// error_pages), which Handler sets before the router runs: they answer
	// the router's own 404 and 405 and every route without error pages of
	// its own. Nil when the file sets none.
	ErrorPages *pipe.ErrorPages

	// RequestID gives each request its ID (the file's request_id), run
	// by Handler first of all, so that the access log, the error pages and
	// every component see it. It is on unless the file says
	// `request_id: false` (nil then).
	RequestID *requestid.Stage

	// Tracer traces the requests (the file's tracing section): Handler
	// runs its stage after the request ID's, and each route's pipeline
	// starts with its route stage. Nil without tracing, and then nothing
	// of it runs. Close sends the spans still queued.
	Tracer *tracing.Tracer

	// ServerHeader is the Server field's value; "" sends none.
	ServerHeader string

	// PidFile, if set, is where the server writes its process id.
	PidFile string

	// User, if set, names the user the server serves as (a name or a
	// numeric id), and Group its group ("": the user's own): a process
	// started as root switches to them and the user's groups once it has
	// opened its listeners and log files (see package daemon). Parse
	// checks that they exist on this system.
	User, Group string

	// Admin is the admin section: where the admin API listens and who
	// may call it; nil when the file has none (no admin API).
	Admin *Admin

	// Databases are the data sources of the file's databases section, by
	// name (see package sqldata), opened but not connected. Close closes
	// them, once the components are closed.
	Databases map[string]*sqldata.DB

	// Routes are every route: the top-level routes, then each site's,
	// in the order written (an included file's where it is included).
	Routes []*Route

	// Sites are the file's sites, in the order written; their routes
	// are in Routes too. A request's host chooses its site before any
	// route is matched.
	Sites []*Site

	// Warnings lists what the file is warned about, sorted by position;
	// they do not make it invalid (see Warning).
	Warnings []*Warning

	// Router routes the requests the top-level routes serve: every
	// request when the file has no sites; with sites, those for the hosts
	// no site names. It is nil when the file has sites and no top-level
	// routes (each Site has its own Router).
	Router *pipe.Router

	// route is what Handler runs after the server-wide stages: Router,
	// or the sites' host lookup.
	route pipe.Component
}

// Log configures the error log: where it goes, in what format, from what
// level up.
type Log struct {
	Level  slog.Level
	Format string // "text" or "json"
	Output string // "stderr", "stdout" or a file path
}

// WorkersAuto is Config.Workers for "workers: auto": one worker process
// per CPU (runtime.NumCPU).
const WorkersAuto = -1

// MaxWorkers bounds Config.Workers: each worker is a process with its own
// caches and connections, and a reload starts a second set beside the
// first, so a number past it is a mistake, not a sizing.
const MaxWorkers = 1024

// Health is the top-level health section: how often a master checks that
// each worker still serves, and how long a check may go unanswered before
// the worker is killed and replaced.
type Health struct {
	Interval time.Duration // between checks; 0 means DefaultHealthInterval
	Timeout  time.Duration // a check unanswered this long fails; 0 means DefaultHealthTimeout
}

// Defaults of the health section.
const (
	DefaultHealthInterval = time.Second
	DefaultHealthTimeout  = 5 * time.Second
)

// WithDefaults returns h with its zero fields set to the defaults.
func (h Health) WithDefaults() Health {
	if h.Interval <= 0 {
		h.Interval = DefaultHealthInterval
	}
	if h.Timeout <= 0 {
		h.Timeout = DefaultHealthTimeout
	}
	return h
}

// HealthKeys are the keys of the health section.
var HealthKeys = []string{"interval", "timeout"}

// Route is one route of the file: what it matches and its pipeline.
type Route struct {
	// Site is the site the route belongs to; nil for a top-level route.
	Site *Site
	// File is the file the route is written in: the config file or one it
	// includes.
	File string

	Match   []string
	Host    string
	Methods []string
	// Name is the route's name (the name key), its label in the metrics
	// (metrics.Registry); "" when the config gives none.
	Name string
	// When are the route's conditions (header, query, client,
	// protocol), as pipe.Route.When.
	When   []pipe.Matcher
	Stages []*Stage
	// ErrorPages are the route's error_pages over the server's, which the
	// router sets when it chooses the route (pipe.Route.ErrorPages); nil
	// when the route sets none (the server's then apply).
	ErrorPages *pipe.ErrorPages
	Line       int // where the route starts in the file
	Col        int
}

// Stage is one component of a pipeline, as written and as built.
type Stage struct {
	Name         string
	Registration *components.Registration
	// Options are the options as written (after ${VAR} expansion), in
	// order: the shorthand argument under its option's key, or the map's
	// keys and values. Values are YAML flow text.
	Options   []Option
	Component pipe.Component
	Line, Col int

	decoded any // the options struct as decoded (a pointer), or nil
}

// Kind is the stage's component kind.
func (s *Stage) Kind() components.Kind { return s.Registration.Kind }

// Option is one option of a stage as written.
type Option struct{ Key, Value string }

// Defaults for what a config file leaves out.
const (
	DefaultListen       = ":8080"
	DefaultServerHeader = "sluice"
)

// Loader reads config files. The zero value reads the process's
// environment and gives components no server context.
type Loader struct {
	// LookupEnv resolves ${VAR} references; nil means os.LookupEnv.
	LookupEnv func(name string) (string, bool)

	// Context is given to every component built.
	Context components.Context
}

// Load reads and builds the config file named file with a zero Loader.
func Load(file string) (*Config, error) { return new(Loader).Load(file) }

// Load reads the config file named file and builds it (see Parse).
func (l *Loader) Load(file string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return l.Parse(file, data)
}

// Parse checks the config data, read from file, and builds its
// components. Relative paths in it are relative to file's directory. An
// invalid config gives an Errors listing every problem found, each with
// its position; components built before the problems were known are
// closed again.
func (l *Loader) Parse(file string, data []byte) (*Config, error) {
	p := &parser{
		decoder: decoder{file: file},
		loader:  l,
		dir:     filepath.Dir(file),
		cfg:     &Config{File: file},
	}
	p.parse(data)
	if len(p.errs) > 0 {
		p.cfg.Close()
		p.errs.sort(p.cfg.Files)
		return nil, p.errs
	}
	sortWarnings(p.cfg.Warnings, p.cfg.Files)
	return p.cfg, nil
}

// Close releases the resources the components hold: every component that
// implements io.Closer is closed, then the databases (whose Close waits
// for the queries running). It is called once no request uses the
// config any more, or, once the grace period of a reload or a shutdown
// has run out, under the requests still in flight (see daemon.Switch): a
// component's Close must let those fail or end short, and stop what they
// still do (cgi kills its programs and waits until they are reaped).
func (c *Config) Close() error {
	var errs []error
	for _, comp := range c.components() {
		if cl, ok := comp.(io.Closer); ok {
			errs = append(errs, cl.Close())
		}
	}
	errs = append(errs, c.closeDatabases(), c.closeTracer())
	return errors.Join(errs...)
}

// Handler returns the engine handler serving the config's routes, behind
// the request ID and the server-wide error pages and access log if the
// file sets them.
func (c *Config) Handler() engine.Handler {
	var chain pipe.Chain
	if c.RequestID != nil {
		chain = append(chain, c.RequestID)
	}
	if c.Tracer != nil {
		chain = append(chain, c.Tracer.Stage())
	}
	if c.ErrorPages != nil {
		chain = append(chain, c.ErrorPages)
	}
	if c.AccessLog != nil {
		chain = append(chain, c.AccessLog.Component)
	}
	route := c.route
	if route == nil {
		route = c.Router
	}
	if chain == nil {
		return pipe.Handler(route)
	}
	return pipe.Handler(append(chain, route))
}

// ExtraMethods lists the methods the routes name beyond those the engine
// knows (engine.Server.ExtraMethods), and PURGE and BAN when a route
// has a cache_purge, so that requests with them reach the router.
func (c *Config) ExtraMethods() []string {
	var out []string
	for _, r := range c.Routes {
		for _, m := range r.Methods {
			if !standardMethods[m] && !contains(out, m) {
				out = append(out, m)
			}
		}
		for _, st := range r.Stages {
			// cache_purge answers PURGE and BAN wherever it is placed.
			if st.Name == "cache_purge" {
				for _, m := range components.CachePurgeMethods {
					if !contains(out, m) {
						out = append(out, m)
					}
				}
			}
		}
	}
	return out
}

var standardMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true,
	"CONNECT": true, "OPTIONS": true, "TRACE": true, "PATCH": true,
}

// TopLevelKeys are the keys a config file may set at the top level.
var TopLevelKeys = []string{"listen", "workers", "health", "drain_timeout", "drain_max_memory", "limits", "log", "access_log", "server_header", "request_id", "tracing", "pid_file", "user", "group", "error_pages", "databases", "routes", "sites", "include", "admin"}

// RouteKeys are the keys of a route.
var RouteKeys = append([]string{"match", "host", "methods", "error_pages", "pipeline", "name"}, MatcherKeys...)

// LogKeys are the keys of the log section.
var LogKeys = []string{"level", "format", "output"}

type parser struct {
	decoder
	loader *Loader
	dir    string
	cfg    *Config
	dbs    map[string]*database // the databases section
	caches *components.Caches   // the caches the routes build

	topRoutes []located        // the top-level routes lists, the included files' too
	siteLists []located        // the sites lists, the included files' too
	pages     *pipe.ErrorPages // the error pages a route's own go over: the server's or its site's

	curSite  *Site             // the site whose routes are parsed; nil at the top level
	place    string            // the place of the route whose pipeline is built (components.Context.Place)
	places   map[string]int    // the routes seen at each place so far
	setNames map[string]string // the upstream sets named so far, and where
}

func (p *parser) parse(data []byte) {
	main := p.mainSource()
	p.cfg.Files = []string{p.file}
	root, ok := p.document(data)
	if !ok {
		return
	}
	if root == nil {
		p.errs = append(p.errs, &Error{File: p.file, Line: 1, Col: 1, Msg: "the config file is empty: it needs at least a routes list"})
		return
	}
	pairs, ok := p.mapping(root, "top-level key", TopLevelKeys)
	if !ok {
		return
	}
	var health, group, databases *yaml.Node
	c := p.cfg
	c.ServerHeader = DefaultServerHeader
	c.RequestID = defaultRequestID
	c.Log = Log{Level: slog.LevelInfo, Format: "text", Output: "stderr"}
	for _, kv := range pairs {
		switch kv.key.Value {
		case "listen":
			p.listen(kv.val)
		case "workers":
			p.workers(kv.val)
		case "health":
			health = kv.val
			p.health(kv.val)
		case "drain_timeout":
			p.drainTimeout(kv.val)
		case "drain_max_memory":
			p.drainMaxMemory(kv.val)
		case "limits":
			p.limits(kv.val)
		case "log":
			p.log(kv.val)
		case "access_log":
			p.accessLog(kv.key, kv.val)
		case "server_header":
			p.serverHeader(kv.val)
		case "request_id":
			p.requestID(kv.val)
		case "tracing":
			p.tracing(kv.val)
		case "error_pages":
			c.ErrorPages = p.errorPages(kv.val, "error_pages")
		case "pid_file":
			if s, ok := p.scalar(kv.val, "pid_file", "a file path"); ok {
				if s == "" {
					p.errorf(kv.val, "pid_file: want a file path, got an empty string")
				} else {
					c.PidFile = p.path(s)
				}
			}
		case "user":
			if s, ok := p.scalar(kv.val, "user", "a user name"); ok {
				if err := checkUser(s); err != nil {
					p.errorf(kv.val, "user: %v", err)
				} else {
					c.User = s
				}
			}
		case "group":
			group = kv.key
			if s, ok := p.scalar(kv.val, "group", "a group name"); ok {
				if err := checkGroup(s); err != nil {
					p.errorf(kv.val, "group: %v", err)
				} else {
					c.Group = s
				}
			}
		case "databases":
			databases = kv.val
		case "routes":
			p.topRoutes = append(p.topRoutes, located{kv.val, main})
		case "sites":
			p.siteLists = append(p.siteLists, located{kv.val, main})
		case "include":
			p.topInclude(kv.val, main)
		case "admin":
			p.admin(kv.key, kv.val)
		}
	}
	if group != nil && c.Group != "" && c.User == "" {
		p.errorf(group, "group: needs a user: the server switches to a user and, with group, to that group")
	}
	if c.Listen == nil {
		c.Listen = []Address{{Network: "tcp", Addr: DefaultListen}}
	}
	if health != nil && c.Workers == 0 {
		p.warn(health, "", HealthWarning)
	}
	if p.topRoutes == nil && p.siteLists == nil {
		p.errorf(root, "no routes: a config file needs a routes list, each route with a match (the paths it serves) and a pipeline (the components that answer), e.g. %s (or sites, each with its hosts and routes)", routesExample)
		return
	}
	if databases != nil { // before the routes, whose components query them
		p.databases(databases)
	}
	p.routing()
	p.unusedDatabases()
	p.accessLogNotes()
}

// expandEnv replaces ${VAR} references in every scalar value under n
// (mapping keys are left alone).
func (p *parser) expandEnv(n *yaml.Node, seen map[*yaml.Node]bool) {
	if n == nil || seen[n] {
		return
	}
	seen[n] = true
	switch n.Kind {
	case yaml.ScalarNode:
		lookup := p.loader.LookupEnv
		if lookup == nil {
			lookup = os.LookupEnv
		}
		v, err := expand(n.Value, lookup)
		if err != nil {
			p.errorf(n, "%v", err)
			p.poison(n)
			return
		}
		n.Value = v
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			p.expandEnv(n.Content[i], seen)
		}
	case yaml.SequenceNode, yaml.DocumentNode:
		for _, c := range n.Content {
			p.expandEnv(c, seen)
		}
	}
}

// path resolves a path written in the file against the file's directory.
func (p *parser) path(s string) string {
	if s == "" || filepath.IsAbs(s) {
		return s
	}
	return filepath.Join(p.dir, s)
}

func (p *parser) workers(n *yaml.Node) {
	s, ok := p.scalar(n, "workers", `a number of processes or "auto"`)
	if !ok {
		return
	}
	if s == "auto" {
		p.cfg.Workers = WorkersAuto
		return
	}
	w, err := strconv.Atoi(s)
	if err != nil || w < 0 {
		p.errorf(n, `workers: want a number of processes (0 for none) or "auto", got %q`, s)
		return
	}
	if w > MaxWorkers {
		p.errorf(n, "workers: %d is more than %d", w, MaxWorkers)
		return
	}
	p.cfg.Workers = w
}

// DefaultDrainTimeout is how long a replaced worker keeps its busy
// connections when the config sets no drain_timeout: long enough for a
// download of gigabytes or a working session over a WebSocket, short
// enough that a day of reloads leaves no pile of old processes.
const DefaultDrainTimeout = time.Hour

func (p *parser) drainTimeout(n *yaml.Node) {
	s, ok := p.scalar(n, "drain_timeout", "a duration")
	if !ok {
		return
	}
	d, err := ParseDuration(s)
	if err != nil || d < time.Second {
		p.errorf(n, "drain_timeout: want a duration of at least 1s (e.g. 1h), got %q", s)
		return
	}
	p.cfg.DrainTimeout = d
}

func (p *parser) drainMaxMemory(n *yaml.Node) {
	s, ok := p.scalar(n, "drain_max_memory", "a size")
	if !ok {
		return
	}
	v, err := ParseSize(s)
	if err != nil || v < 1e6 {
		p.errorf(n, "drain_max_memory: want a size of at least 1MB (e.g. 2GB), got %q", s)
		return
	}
	p.cfg.DrainMaxMemory = v
}

func (p *parser) health(n *yaml.Node) {
	pairs, _ := p.mapping(n, "health key", HealthKeys)
	for _, kv := range pairs {
		s, ok := p.scalar(kv.val, "health."+kv.key.Value, "a duration")
		if !ok {
			continue
		}
		d, err := ParseDuration(s)
		if err != nil || d <= 0 {
			p.errorf(kv.val, "health.%s: want a positive duration (e.g. 2s), got %q", kv.key.Value, s)
			continue
		}
		if kv.key.Value == "interval" {
			p.cfg.Health.Interval = d
		} else {
			p.cfg.Health.Timeout = d
		}
	}
	// A worker sends a heartbeat every interval and is killed when none
	// came for the timeout: an interval as long would kill healthy ones.
	if h := p.cfg.Health.WithDefaults(); h.Interval >= h.Timeout {
		p.errorf(n, "health: interval %v is not shorter than timeout %v: a worker beats once an interval and is killed after a timeout without a beat", h.Interval, h.Timeout)
	}
}

func (p *parser) serverHeader(n *yaml.Node) {
	s, ok := p.scalar(n, "server_header", "a string or false")
	if !ok {
		return
	}
	n = deref(n)
	if !quoted(n) && n.Tag == "!!bool" {
		switch s {
		case "false", "False", "FALSE":
			s = ""
		default:
			s = DefaultServerHeader
		}
	}
	if strings.ContainsAny(s, "\r\n\x00") {
		p.errorf(n, "server_header: a header value cannot hold line breaks or NUL")
		return
	}
	if strings.Contains(s, "$version") {
		v := "unknown"
		if Version != nil {
			v = Version()
		}
		s = strings.ReplaceAll(s, "$version", strings.ReplaceAll(v, " ", "-"))
	}
	p.cfg.ServerHeader = s
}

// Version, when set, returns the version of the running program, which
// "$version" in server_header stands for (with its spaces made '-', so
// that it stays one product token): the default Server field names no
// version, and a config shows it only by asking. Set it once, before
// parsing.
var Version func() string

func (p *parser) log(n *yaml.Node) {
	pairs, _ := p.mapping(n, "log key", LogKeys)
	for _, kv := range pairs {
		s, ok := p.scalar(kv.val, "log."+kv.key.Value, "a string")
		if !ok {
			continue
		}
		switch kv.key.Value {
		case "level":
			var l slog.Level
			if err := l.UnmarshalText([]byte(s)); err != nil || strings.ContainsAny(s, "+-") {
				p.errorf(kv.val, "log.level: want debug, info, warn or error, got %q", s)
				continue
			}
			p.cfg.Log.Level = l
		case "format":
			if s != "text" && s != "json" {
				p.errorf(kv.val, "log.format: want text or json, got %q", s)
				continue
			}
			p.cfg.Log.Format = s
		case "output":
			switch s {
			case "":
				p.errorf(kv.val, "log.output: want stderr, stdout or a file path, got an empty string")
			case "stderr", "stdout":
				p.cfg.Log.Output = s
			default:
				path := p.path(s)
				if fi, err := os.Stat(filepath.Dir(path)); err != nil || !fi.IsDir() {
					p.errorf(kv.val, "log.output: directory %s does not exist", filepath.Dir(path))
					continue
				}
				p.cfg.Log.Output = path
			}
		}
	}
}

// Chown makes uid and gid the owner of the files the components write to
// (those with a Chown(uid, gid int) error method, such as the access
// logs), so that a process that switches to that user once the config is
// built can still reopen them (see Reopen).
func (c *Config) Chown(uid, gid int) error {
	var errs []error
	for _, comp := range c.components() {
		if ch, ok := comp.(interface{ Chown(uid, gid int) error }); ok {
			errs = append(errs, ch.Chown(uid, gid))
		}
	}
	return errors.Join(errs...)
}

// components returns every component built: the access log's, then the
// routes' in order.
func (c *Config) components() []pipe.Component {
	var out []pipe.Component
	if c.AccessLog != nil && c.AccessLog.Component != nil {
		out = append(out, c.AccessLog.Component)
	}
	for _, r := range c.Routes {
		for _, s := range r.Stages {
			if s.Component != nil {
				out = append(out, s.Component)
			}
		}
	}
	return out
}

// accessLog builds the server-wide access log: the log component with
// the value as its argument, recording the requests of every route.
func (p *parser) accessLog(key, n *yaml.Node) {
	if isNull(deref(n)) {
		p.errorf(key, "access_log: want a file path (or stdout or stderr) or a map of the log component's options, e.g. access_log: {file: ./access.log, format: json}")
		return
	}
	reg, _ := components.Lookup("log")
	s := p.build(key, reg, n, "access_log", func(opts any) {
		opts.(*components.LogOptions).ServerWide = true
	})
	if s.Component != nil {
		p.cfg.AccessLog = s
	}
}

// Reopen reopens the files the components write to (those with a
// Reopen() error method, such as the access logs), typically on SIGUSR1
// after logrotate has moved them.
func (c *Config) Reopen() error {
	var errs []error
	for _, comp := range c.components() {
		if ro, ok := comp.(interface{ Reopen() error }); ok {
			errs = append(errs, ro.Reopen())
		}
	}
	return errors.Join(errs...)
}
