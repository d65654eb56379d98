package pipe

import (
	"fmt"
	"regexp"
	"strings"
)

// RegexPrefix starts a route pattern that is a regular expression (see
// Route.Match): "~ " and then the expression, as nginx writes a regular
// expression location. A path always starts with '/', so no path
// pattern can be taken for one.
const RegexPrefix = "~ "

// regexGroup is the routes of one regular expression, in the order the
// router tries them.
type regexGroup struct {
	re     *regexp.Regexp
	names  []string // re.SubexpNames()
	routes []*route
}

// CompileRegex compiles the expression of a regular-expression pattern
// (the pattern without RegexPrefix) as NewRouter does, and refuses one
// that is empty or whose named groups repeat a name, or name a group by
// a number (Conn.Param gives every group by its number).
func CompileRegex(expr string) (*regexp.Regexp, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, fmt.Errorf("regular expression %q is empty", expr)
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, fmt.Errorf("regular expression %q: %v", expr, err)
	}
	seen := map[string]bool{}
	for _, name := range re.SubexpNames()[1:] {
		if name == "" {
			continue
		}
		if name[0] >= '0' && name[0] <= '9' {
			return nil, fmt.Errorf("regular expression %q: the group name %q starts with a digit: numbers are the groups' own ($1 is the first); name it with a letter", expr, name)
		}
		if seen[name] {
			return nil, fmt.Errorf("regular expression %q: the group name %q is used twice", expr, name)
		}
		seen[name] = true
	}
	return re, nil
}

// captureRegex records the groups of a regular expression that matched
// the request path, at the offsets m (from FindSubmatchIndex) with the
// names of names (from SubexpNames), as the Conn's parameters: each in
// the order of its group, under its name or "" for a group without one
// (Param reaches every group by its number). A group that took no part
// in the match has the value "". One string allocation for them all,
// none when the expression has no group.
func (c *Conn) captureRegex(names []string, m []int) {
	clear(c.params)
	c.params = c.params[:0]
	if len(m) <= 2 {
		return
	}
	path := string(c.Request.Path)
	for i := 1; i < len(m)/2; i++ {
		v := ""
		if m[2*i] >= 0 {
			v = path[m[2*i]:m[2*i+1]]
		}
		c.params = append(c.params, keyValue{names[i], v})
	}
}
