package components

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sqldata"
)

// TemplateQuery is a named query whose result a template reads as
// .DB.NAME (see TemplateOptions.Queries).
type TemplateQuery struct {
	// Database names the data source (a key of the config's databases,
	// or of TemplateOptions.Databases).
	Database string `yaml:"database"`

	// SQL is the statement, with the driver's placeholders for Args: ?
	// for sqlite and mysql, $1, $2… for postgres.
	SQL string `yaml:"sql"`

	// Args are the statement's arguments, in order.
	Args []QueryArg `yaml:"args"`

	// One reads a single row, .DB.NAME being that row; no row answers
	// 404. Without it .DB.NAME is the list of rows, maybe empty.
	One bool `yaml:"one"`

	// Cache keeps each result for this long per distinct arguments (see
	// sqldata.QueryOptions.Cache); 0, the default, queries every time.
	Cache time.Duration `yaml:"cache"`
}

// QueryArg is where an argument of a query comes from: exactly one of
// Path, Query and Value.
type QueryArg struct {
	// Path names a path parameter: a capture of the route's match, id
	// for /article/{id:int} (see pipe.Conn.Param). The router has checked
	// an int capture (400 otherwise) before the pipeline runs.
	Path string `yaml:"path"`

	// Query names a parameter of the URL's query string (?page=2). A
	// request without it answers 400, unless Default is set.
	Query string `yaml:"query"`

	// Value is the argument itself.
	Value *string `yaml:"value"`

	// Int requires an integer (as strconv.ParseInt reads it, base 10),
	// passed to the query as one; anything else answers 400.
	Int bool `yaml:"int"`

	// Default is the value of a Query argument the request leaves out.
	Default *string `yaml:"default"`
}

// MaxQueryArg bounds an argument taken from a request: a longer one
// answers 400.
const MaxQueryArg = 1024

// templateQuery is a query ready to run.
type templateQuery struct {
	name string
	q    *sqldata.Query
	args []QueryArg
	one  bool
}

// buildQueries checks opts.Queries and defines them on their databases,
// in the order of their names.
func buildQueries(opts TemplateOptions) ([]templateQuery, error) {
	var out []templateQuery
	names := make([]string, 0, len(opts.Queries))
	for name := range opts.Queries {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		tq := opts.Queries[name]
		if !validName(name) {
			return nil, fmt.Errorf("template: query %q: a name is a lower-case letter, then lower-case letters, digits and underscores (a template reads it as .DB.%s)", name, name)
		}
		if tq.Database == "" {
			return nil, fmt.Errorf("template: query %s: database is not set", name)
		}
		db := opts.Databases[tq.Database]
		if db == nil {
			return nil, fmt.Errorf("template: query %s: no database %q (a database is defined in the config's databases)", name, tq.Database)
		}
		for i, a := range tq.Args {
			n := 0
			if a.Path != "" {
				n++
			}
			if a.Query != "" {
				n++
			}
			if a.Value != nil {
				n++
			}
			switch {
			case n != 1:
				return nil, fmt.Errorf("template: query %s: args[%d]: set one of path, query and value", name, i)
			case a.Default != nil && a.Query == "":
				return nil, fmt.Errorf("template: query %s: args[%d]: default is for a query argument", name, i)
			case a.Int && a.Value != nil:
				if _, err := strconv.ParseInt(*a.Value, 10, 64); err != nil {
					return nil, fmt.Errorf("template: query %s: args[%d]: value %q is not an integer", name, i, *a.Value)
				}
			case a.Int && a.Default != nil:
				if _, err := strconv.ParseInt(*a.Default, 10, 64); err != nil {
					return nil, fmt.Errorf("template: query %s: args[%d]: default %q is not an integer", name, i, *a.Default)
				}
			}
		}
		q, err := db.Query(sqldata.QueryOptions{Name: name, SQL: tq.SQL, One: tq.One, Cache: tq.Cache})
		if err != nil {
			return nil, fmt.Errorf("template: %v", err)
		}
		out = append(out, templateQuery{name, q, tq.Args, tq.One})
	}
	return out, nil
}

// argError is a request's argument that is missing or invalid: 400.
type argError struct{ msg string }

func (e *argError) Error() string { return e.msg }

// argValues reads the query's arguments from the request.
func (tq *templateQuery) argValues(c *pipe.Conn, query url.Values) ([]any, error) {
	out := make([]any, len(tq.args))
	for i, a := range tq.args {
		var s, what string
		switch {
		case a.Path != "":
			s, what = c.Param(a.Path), "path parameter "+a.Path
		case a.Query != "":
			what = "parameter " + a.Query
			if vs, ok := query[a.Query]; ok && len(vs) > 0 {
				s = vs[0]
			} else if a.Default != nil {
				s = *a.Default
			} else {
				return nil, &argError{"missing " + what}
			}
		default:
			s, what = *a.Value, "value"
		}
		if len(s) > MaxQueryArg {
			return nil, &argError{what + " is too long"}
		}
		if !a.Int {
			out[i] = s
			continue
		}
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return nil, &argError{what + ": want an integer"}
		}
		out[i] = n
	}
	return out, nil
}

// runQueries fills data.DB with the results of the queries, or answers
// the request with the error: 400 for an invalid argument, 404 when a
// one-row query finds none, 503 with Retry-After when a data source sheds
// the query, 504 when it runs past its timeout, 500 otherwise (logged;
// the client is told nothing of the database).
func (tp *Template) runQueries(c *pipe.Conn, data *TemplateData) bool {
	data.DB = make(map[string]any, len(tp.queries))
	for i := range tp.queries {
		tq := &tp.queries[i]
		args, err := tq.argValues(c, data.Query)
		if err != nil {
			return c.Error(http.StatusBadRequest, err.Error())
		}
		res, err := tq.q.Run(context.Background(), args...)
		switch {
		case err == nil:
		case errors.Is(err, sqldata.ErrNoRows):
			return c.Error(http.StatusNotFound, "not found")
		case errors.Is(err, sqldata.ErrBusy):
			tp.log.Debug("template: query shed", "query", tq.name, "path", data.Path, "err", err, c.RequestIDAttr())
			c.Header().Set("Retry-After", strconv.Itoa(tq.q.DB().RetryAfter()))
			return c.Error(http.StatusServiceUnavailable, "busy; try again later")
		case errors.Is(err, sqldata.ErrTimeout):
			tp.log.Error("template: query timed out", "query", tq.name, "path", data.Path, "err", err, c.RequestIDAttr())
			return c.Error(http.StatusGatewayTimeout, "the data for this page took too long")
		default:
			tp.log.Error("template: query failed", "query", tq.name, "path", data.Path, "err", err, c.RequestIDAttr())
			return c.Error(http.StatusInternalServerError, "the data for this page is unavailable")
		}
		if tq.one {
			data.DB[tq.name] = res.Row
		} else {
			data.DB[tq.name] = res.Rows
		}
	}
	return true
}
