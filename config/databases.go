package config

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sqldata"
)

// DatabaseKeys are the keys of a database in the databases section.
var DatabaseKeys = func() []string {
	var keys []string
	for _, f := range components.OptionFields(reflect.TypeFor[sqldata.Options]()) {
		keys = append(keys, f.Key)
	}
	return keys
}()

// database is a data source of the file and where it is defined.
type database struct {
	db   *sqldata.DB
	node *yaml.Node // its name
	used bool
}

// databases opens the data sources of the databases section (connecting
// to none: see sqldata.Open). A sqlite dsn's relative file name is
// relative to the config file's directory.
func (p *parser) databases(n *yaml.Node) {
	pairs, _ := p.mapping(n, "database name", nil)
	for _, kv := range pairs {
		name := kv.key.Value
		if !validDatabaseName(name) {
			p.errorf(kv.key, "databases: %q: a database name is a letter, then letters, digits, _ and -", name)
			continue
		}
		var o sqldata.Options
		if deref(kv.val).Kind != yaml.MappingNode {
			p.errorf(kv.val, "databases.%s: want a map of options (driver, dsn, …), got %s", name, describe(kv.val))
			continue
		}
		if !p.options(kv.val, reflect.ValueOf(&o).Elem(), "databases."+name, "") {
			continue
		}
		if o.Driver == "sqlite" {
			o.DSN = p.sqlitePath(o.DSN)
			if msg := sqliteFileProblem(o.DSN); msg != "" {
				p.errorf(valueOf(kv.val, "dsn", kv.key), "databases.%s.dsn: %s", name, msg)
				continue
			}
		}
		db, err := sqldata.Open(name, o)
		if err != nil {
			p.errorf(kv.key, "databases.%s%s", name, strings.TrimPrefix(err.Error(), "database "+name))
			continue
		}
		if p.dbs == nil {
			p.dbs = map[string]*database{}
		}
		p.dbs[name] = &database{db: db, node: kv.key}
		if p.cfg.Databases == nil {
			p.cfg.Databases = map[string]*sqldata.DB{}
		}
		p.cfg.Databases[name] = db
	}
}

// database is the Context.Database of the components: it returns the
// data source name and notes that it is used.
func (p *parser) database(name string) (*sqldata.DB, bool) {
	d := p.dbs[name]
	if d == nil {
		return nil, false
	}
	d.used = true
	return d.db, true
}

// unusedDatabases warns about the data sources no component asked for.
func (p *parser) unusedDatabases() {
	var names []string
	for name, d := range p.dbs {
		if !d.used {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range names {
		p.warn(p.dbs[name].node, "", "databases."+name+": no route queries it")
	}
}

// sqlitePath resolves the file name of a sqlite dsn (a name, or a file:
// URI whose path is relative) against the config file's directory.
func (p *parser) sqlitePath(dsn string) string {
	rest, uri := strings.CutPrefix(dsn, "file:")
	name, query, hasQuery := strings.Cut(rest, "?")
	if name == "" || name == ":memory:" || strings.HasPrefix(name, "//") || filepath.IsAbs(name) {
		return dsn
	}
	if uri {
		if u, err := url.PathUnescape(name); err == nil && filepath.IsAbs(u) {
			return dsn
		}
	}
	out := p.path(name)
	if uri {
		out = "file:" + out
	}
	if hasQuery {
		out += "?" + query
	}
	return out
}

// sqliteFileProblem says why the file of a sqlite dsn (resolved by
// sqlitePath) cannot be a database SQLite opens — it is a directory, or
// its directory does not exist — or returns "". An in-memory database, or
// a URI naming a host, is not looked at.
func sqliteFileProblem(dsn string) string {
	rest, uri := strings.CutPrefix(dsn, "file:")
	name, query, _ := strings.Cut(rest, "?")
	if name == "" || name == ":memory:" || strings.HasPrefix(name, "//") || strings.Contains(query, "mode=memory") {
		return ""
	}
	if uri {
		u, err := url.PathUnescape(name)
		if err != nil {
			return ""
		}
		name = u
	}
	if fi, err := os.Stat(name); err == nil && fi.IsDir() {
		return name + " is a directory: name the database file (" + filepath.Join(name, "site.db") + ", say)"
	}
	dir := filepath.Dir(name)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return "directory " + dir + " does not exist: create it, or correct the path"
	}
	return ""
}

// valueOf returns the value node of key in the mapping n, or def if n
// has no such key.
func valueOf(n *yaml.Node, key string, def *yaml.Node) *yaml.Node {
	n = deref(n)
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return def
}

func validDatabaseName(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && ('0' <= c && c <= '9' || c == '_' || c == '-')) {
			return false
		}
	}
	return s != ""
}

// closeDatabases closes the data sources.
func (c *Config) closeDatabases() error {
	var errs []error
	for _, db := range c.Databases {
		errs = append(errs, db.Close())
	}
	return errors.Join(errs...)
}

// queryParams checks that the path parameters the route's template
// queries read are captured by every pattern of its match.
func (p *parser) queryParams(r *Route) {
	for _, s := range r.Stages {
		o, ok := s.decoded.(*components.TemplateOptions)
		if !ok || s.Component == nil {
			continue
		}
		names := make([]string, 0, len(o.Queries))
		for name := range o.Queries {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			for i, a := range o.Queries[name].Args {
				if a.Path == "" {
					continue
				}
				for _, pat := range r.Match {
					if expr, ok := strings.CutPrefix(pat, pipe.RegexPrefix); ok {
						if !regexCaptures(expr, a.Path) {
							p.errorf(&yaml.Node{Line: s.Line, Column: s.Col}, "template: query %s: args[%d]: match %q has no group %q (write (?P<%s>...) in it)", name, i, pat, a.Path, a.Path)
						}
						continue
					}
					if !strings.Contains(pat, "{"+a.Path+"}") && !strings.Contains(pat, "{"+a.Path+":") {
						p.errorf(&yaml.Node{Line: s.Line, Column: s.Col}, "template: query %s: args[%d]: match %q captures no path parameter %q (write {%s} or {%s:int} in it)", name, i, pat, a.Path, a.Path, a.Path)
					}
				}
			}
		}
	}
}
