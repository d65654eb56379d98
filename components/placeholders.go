package components

import (
	"fmt"
	"slices"
	"strings"
)

// Placeholders: the $-syntax of the templates of redirect's to and
// rewrite's to. A template is literal text in which
//
//	$name, ${name}  a variable the component offers (path, query, args,
//	                host, hostname), or else the route's path parameter name
//	$1, ${1}        the route's first path parameter (its first capture,
//	                named or not), and so on
//	$$              a literal $
//
// Without braces a name runs over letters, digits and '_' (from a letter
// or '_'), a number over digits: "$id.html" is the parameter id then
// ".html", and "${id}x" (in a config file "$${id}x", as ${ is an
// environment variable there) delimits it. A variable's name wins over a
// parameter's: a parameter called path is reached by its number. What a
// placeholder stands for is escaped for where it lands (see
// appendPathValue, appendQueryValue).

// placeholder is one part of a template: a literal (v and param ""), a
// variable (v), or a path parameter (param: a name or a number).
type placeholder struct {
	lit, v, param string
	inQuery       bool // a '?' or '#' comes before it in the template, or $query
}

func (p placeholder) String() string {
	switch {
	case p.v != "":
		return "$" + p.v
	case p.param != "":
		return "${" + p.param + "}"
	}
	return p.lit
}

// parsePlaceholders splits the template s of the component who into
// literals, the variables of vars and path parameters.
func parsePlaceholders(who, s string, vars []string) ([]placeholder, error) {
	var parts []placeholder
	var lit strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			lit.WriteByte(s[i])
			continue
		}
		rest := s[i+1:]
		var name string
		switch {
		case strings.HasPrefix(rest, "$"):
			lit.WriteByte('$')
			i++
			continue
		case strings.HasPrefix(rest, "{"):
			end := strings.IndexByte(rest, '}')
			if end < 0 {
				return nil, fmt.Errorf("%s: unclosed ${ in %q", who, s)
			}
			name = rest[1:end]
			i += end + 1
		case len(rest) > 0 && isDigit(rest[0]):
			n := 0
			for n < len(rest) && isDigit(rest[n]) {
				n++
			}
			name = rest[:n]
			i += n
		default:
			n := 0
			for n < len(rest) && isNameByte(rest[n]) {
				n++
			}
			name = rest[:n]
			i += n
			if name == "" {
				return nil, fmt.Errorf("%s: a $ in %q starts no placeholder (want $%s, a path parameter $name or $1, or $$ for a $)", who, s, strings.Join(vars, ", $"))
			}
		}
		if !placeholderName(name) {
			return nil, fmt.Errorf("%s: %q in %q is no placeholder: a path parameter's name is letters, digits and _ ($name, ${name}), or its number ($1)", who, "${"+name+"}", s)
		}
		if lit.Len() > 0 {
			parts = append(parts, placeholder{lit: lit.String()})
			lit.Reset()
		}
		if slices.Contains(vars, name) {
			parts = append(parts, placeholder{v: name})
		} else {
			if name == "0" || name[0] == '0' && len(name) > 1 {
				return nil, fmt.Errorf("%s: $%s in %q: path parameters are numbered from $1", who, name, s)
			}
			parts = append(parts, placeholder{param: name})
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, placeholder{lit: lit.String()})
	}
	inQuery := false
	for i := range parts {
		parts[i].inQuery = inQuery
		switch {
		case parts[i].v == "args" && !inQuery:
			return nil, fmt.Errorf("%s: $args in %q is the query without its \"?\": write it after a ? (/search?$args) or write $query, which brings its own", who, s)
		case parts[i].v == "query" || strings.ContainsAny(parts[i].lit, "?#"):
			inQuery = true
		}
	}
	return parts, nil
}

// literal reports whether p is text of the template.
func (p placeholder) literal() bool { return p.v == "" && p.param == "" }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isNameByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || isDigit(c)
}

// placeholderName reports whether s is a number or an identifier.
func placeholderName(s string) bool {
	if s == "" {
		return false
	}
	if isDigit(s[0]) {
		return strings.IndexFunc(s, func(r rune) bool { return r < '0' || r > '9' }) < 0 && len(s) <= 4
	}
	for i := 0; i < len(s); i++ {
		if !isNameByte(s[i]) {
			return false
		}
	}
	return true
}

// PlaceholderParams returns the path parameters (names, or numbers from
// "1") that the template s of the component named component's to
// ("redirect" or "rewrite") uses, in order, each once; nil when it uses
// none, does not parse, or component has no template. A name is a
// parameter unless it is one of that component's variables: $host is
// redirect's variable, and in a rewrite the parameter host. Config
// checks them against the route's patterns.
func PlaceholderParams(component, s string) []string {
	vars, ok := templateVars[component]
	if !ok {
		return nil
	}
	parts, err := parsePlaceholders("", s, vars)
	if err != nil {
		return nil
	}
	var out []string
	for _, p := range parts {
		if p.param != "" && !slices.Contains(out, p.param) {
			out = append(out, p.param)
		}
	}
	return out
}

// placeholderVars are the variables of redirect's templates; rewrite's
// are fewer (rewriteVars).
var placeholderVars = []string{"path", "query", "args", "host", "hostname"}

// templateVars are the variables of each component's to, by its name.
var templateVars = map[string][]string{"redirect": redirectVars, "rewrite": rewriteVars}

// appendPathValue appends v, a path parameter's value, for a URL path:
// percent-encoded but for what a path may hold as is (redirectURLChar)
// other than ':', so its '/' stay (a regular expression's group may span
// segments) and a '%', '?', '#', ':', space or backslash in it is an
// escape, never syntax.
func appendPathValue(b []byte, v string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		// A ':' escaped too: before any '/' it would make a scheme of what
		// comes before ("javascript:", "https:").
		if c := v[i]; c == ':' || !redirectURLChar(c) {
			b = append(b, '%', hex[c>>4], hex[c&15])
		} else {
			b = append(b, c)
		}
	}
	return b
}

// appendQueryValue appends v, a path parameter's value, for a query: every
// byte but the unreserved ones (RFC 3986 §2.3) percent-encoded, so that
// it is one value whatever it holds ('&', '=', '+', '#', '%').
func appendQueryValue(b []byte, v string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(v); i++ {
		c := v[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b = append(b, c)
			continue
		}
		b = append(b, '%', hex[c>>4], hex[c&15])
	}
	return b
}
