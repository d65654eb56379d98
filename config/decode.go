package config

import (
	"encoding"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
)

// decoder turns YAML nodes into Go values, collecting every error with
// its position rather than stopping at the first.
type decoder struct {
	file string
	errs Errors
	bad  map[*yaml.Node]bool // nodes already in error, not to be reported again
}

// poison marks n as already reported, so that decoding it later reports
// nothing more (an unset ${VAR} is one error, not two).
func (d *decoder) poison(n *yaml.Node) {
	if d.bad == nil {
		d.bad = map[*yaml.Node]bool{}
	}
	d.bad[n] = true
}

func (d *decoder) errorf(n *yaml.Node, format string, args ...any) {
	d.errs = append(d.errs, &Error{File: d.file, Line: n.Line, Col: n.Column, Msg: fmt.Sprintf(format, args...)})
}

// pair is one key and value of a mapping.
type pair struct{ key, val *yaml.Node }

// mapping returns the pairs of the mapping n, reporting a node that is
// not a mapping, duplicate keys, and keys not in known (unless known is
// nil). what names the keys in messages ("top-level key", "option of
// files"). ok is false when n is not a mapping.
func (d *decoder) mapping(n *yaml.Node, what string, known []string) (pairs []pair, ok bool) {
	n = deref(n)
	if isNull(n) {
		return nil, true
	}
	if n.Kind != yaml.MappingNode {
		d.errorf(n, "want a map of %ss, got %s", what, describe(n))
		return nil, false
	}
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := deref(n.Content[i]), n.Content[i+1]
		if k.Kind != yaml.ScalarNode {
			d.errorf(k, "a %s must be a string, got %s", what, describe(k))
			continue
		}
		if k.Tag == "!!merge" {
			d.errorf(k, "merge keys (<<) are not supported")
			continue
		}
		if prev := seen[k.Value]; prev != nil {
			d.errorf(k, "%s %q is already set at %d:%d", what, k.Value, prev.Line, prev.Column)
			continue
		}
		seen[k.Value] = k
		if known != nil && !contains(known, k.Value) {
			d.errorf(k, "unknown %s %q%s", what, k.Value, suggest(k.Value, known))
			continue
		}
		pairs = append(pairs, pair{k, v})
	}
	return pairs, true
}

// suggest returns " (did you mean "x"?)" for the closest of names, or the
// list of names when none is close.
func suggest(s string, names []string) string {
	best, bestDist := "", 1<<30
	for _, n := range names {
		if d := editDistance(strings.ToLower(s), strings.ToLower(n)); d < bestDist {
			best, bestDist = n, d
		}
	}
	if best != "" && (bestDist <= 2 || bestDist <= len(best)/3) && bestDist < len(s) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	if len(names) == 0 {
		return ""
	}
	return " (want one of: " + strings.Join(names, ", ") + ")"
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// deref follows an alias to the node it names.
func deref(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	return n
}

// isNull reports whether n is absent or a YAML null (~, null, nothing).
func isNull(n *yaml.Node) bool {
	return n == nil || n.Kind == yaml.ScalarNode && n.Tag == "!!null"
}

// describe names what n is, for messages.
func describe(n *yaml.Node) string {
	n = deref(n)
	switch {
	case isNull(n):
		return "nothing"
	case n.Kind == yaml.MappingNode:
		return "a map"
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.ScalarNode:
		return strconv.Quote(n.Value)
	}
	return "a YAML document"
}

// quoted reports whether the scalar n was written in quotes, which makes
// it a string whatever it looks like.
func quoted(n *yaml.Node) bool {
	return n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0
}

// scalar returns the value of the scalar n, or reports that it is not one.
func (d *decoder) scalar(n *yaml.Node, name, want string) (string, bool) {
	n = deref(n)
	if d.bad[n] {
		return "", false
	}
	if n.Kind != yaml.ScalarNode {
		d.errorf(n, "%s: want %s, got %s", name, want, describe(n))
		return "", false
	}
	return n.Value, true
}

// strings decodes a string or a list of strings.
func (d *decoder) stringList(n *yaml.Node, name string) []string {
	n = deref(n)
	if isNull(n) {
		return nil
	}
	if n.Kind == yaml.ScalarNode {
		return []string{n.Value}
	}
	if n.Kind != yaml.SequenceNode {
		d.errorf(n, "%s: want a string or a list of strings, got %s", name, describe(n))
		return nil
	}
	var out []string
	for _, e := range n.Content {
		if s, ok := d.scalar(e, name, "a string"); ok {
			out = append(out, s)
		}
	}
	return out
}

var (
	durationType        = reflect.TypeFor[time.Duration]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// value decodes n into v, reporting errors under name (an option path
// such as "levels.gzip"). It reports whether v was decoded without error.
func (d *decoder) value(n *yaml.Node, v reflect.Value, name string) bool {
	n = deref(n)
	if d.bad[n] {
		return false
	}
	t := v.Type()
	if isNull(n) && t.Kind() != reflect.Struct {
		v.SetZero()
		return true
	}
	if t == durationType {
		s, ok := d.scalar(n, name, "a duration")
		if !ok {
			return false
		}
		dur, err := ParseDuration(s)
		if err != nil {
			d.errorf(n, "%s: %v, got %q", name, err, s)
			return false
		}
		v.SetInt(int64(dur))
		return true
	}
	if reflect.PointerTo(t).Implements(textUnmarshalerType) && t.Kind() != reflect.Pointer {
		s, ok := d.scalar(n, name, "a string")
		if !ok {
			return false
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			d.errorf(n, "%s: %v", name, err)
			return false
		}
		return true
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if !d.value(n, p.Elem(), name) {
			return false
		}
		v.Set(p)
		return true
	case reflect.String:
		s, ok := d.scalar(n, name, "a string")
		v.SetString(s)
		return ok
	case reflect.Bool:
		s, ok := d.scalar(n, name, "true or false")
		if !ok {
			return false
		}
		switch s {
		case "true", "True", "TRUE":
			v.SetBool(true)
		case "false", "False", "FALSE":
			v.SetBool(false)
		default:
			d.errorf(n, "%s: want true or false, got %q", name, s)
			return false
		}
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		s, ok := d.scalar(n, name, "a whole number")
		if !ok {
			return false
		}
		i, err := strconv.ParseInt(s, 0, 64)
		if err != nil {
			i, err = ParseSize(s)
		}
		switch {
		case err != nil && s != "" && s[0] >= '0' && s[0] <= '9':
			d.errorf(n, "%s: %v, got %q", name, err, s)
			return false
		case err != nil || v.OverflowInt(i):
			d.errorf(n, "%s: want a whole number, got %q", name, s)
			return false
		}
		v.SetInt(i)
		return true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		s, ok := d.scalar(n, name, "a whole number")
		if !ok {
			return false
		}
		u, err := strconv.ParseUint(s, 0, 64)
		if err != nil {
			var i int64
			if i, err = ParseSize(s); err == nil && i >= 0 {
				u = uint64(i)
			} else if err == nil {
				err = strconv.ErrRange
			}
		}
		if err != nil || v.OverflowUint(u) {
			d.errorf(n, "%s: want a whole number ≥ 0, got %q", name, s)
			return false
		}
		v.SetUint(u)
		return true
	case reflect.Float32, reflect.Float64:
		s, ok := d.scalar(n, name, "a number")
		if !ok {
			return false
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || v.OverflowFloat(f) {
			d.errorf(n, "%s: want a number, got %q", name, s)
			return false
		}
		v.SetFloat(f)
		return true
	case reflect.Slice:
		var elems []*yaml.Node
		switch n.Kind {
		case yaml.SequenceNode:
			elems = n.Content
		case yaml.ScalarNode:
			if t.Elem().Kind() == reflect.Slice {
				d.errorf(n, "%s: want a list, got %s", name, describe(n))
				return false
			}
			elems = []*yaml.Node{n} // a single value is a list of one
		default:
			d.errorf(n, "%s: want a list, got %s", name, describe(n))
			return false
		}
		s := reflect.MakeSlice(t, len(elems), len(elems))
		ok := true
		for i, e := range elems {
			ok = d.value(e, s.Index(i), fmt.Sprintf("%s[%d]", name, i)) && ok
		}
		v.Set(s)
		return ok
	case reflect.Map:
		if t.Key().Kind() != reflect.String {
			d.errorf(n, "%s: option type %s is not supported in config files", name, t)
			return false
		}
		if n.Kind != yaml.MappingNode {
			d.errorf(n, "%s: want a map, got %s", name, describe(n))
			return false
		}
		pairs, ok := d.mapping(n, name+" key", nil)
		if !ok {
			return false
		}
		m := reflect.MakeMapWithSize(t, len(pairs))
		for _, p := range pairs {
			e := reflect.New(t.Elem()).Elem()
			ok = d.value(p.val, e, name+"."+p.key.Value) && ok
			m.SetMapIndex(reflect.ValueOf(p.key.Value).Convert(t.Key()), e)
		}
		v.Set(m)
		return ok
	case reflect.Struct:
		return d.options(n, v, name, "")
	case reflect.Interface:
		if t.NumMethod() != 0 {
			break
		}
		var x any
		if err := n.Decode(&x); err != nil {
			d.errorf(n, "%s: %v", name, err)
			return false
		}
		if x != nil {
			v.Set(reflect.ValueOf(x))
		}
		return true
	}
	d.errorf(n, "%s: option type %s is not supported in config files", name, t)
	return false
}

// options decodes the mapping n into the struct v by the fields' yaml
// tags, after checking every key against them so that an unknown key is
// reported where it is written. prefix is the path of the struct's
// options in messages ("" at the top); component names the component for
// the unknown-key message.
func (d *decoder) options(n *yaml.Node, v reflect.Value, prefix, component string) bool {
	fields := components.OptionFields(v.Type())
	keys := make([]string, 0, len(fields))
	for _, f := range fields {
		keys = append(keys, f.Key)
	}
	what := "option"
	switch {
	case prefix != "":
		what = prefix + " option"
	case component != "":
		what = component + " option"
	}
	errs := len(d.errs)
	pairs, ok := d.mapping(n, what, keys)
	if !ok {
		return false
	}
	for _, p := range pairs {
		for _, f := range fields {
			if f.Key == p.key.Value {
				name := f.Key
				switch {
				case prefix != "":
					name = prefix + "." + f.Key
				case component != "":
					name = component + ": " + f.Key
				}
				d.value(p.val, v.FieldByIndex(f.Index), name)
			}
		}
	}
	return len(d.errs) == errs
}

// fieldByKey returns the option of the options struct type t whose key
// is key.
// pathOption returns the string option key of the options struct v (see
// components.OptionPath), or false when it is not one or lies in a nil
// pointer (an option struct not set).
func pathOption(v reflect.Value, key string) (reflect.Value, bool) {
	for {
		if v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, false
			}
			v = v.Elem()
		}
		if v.Kind() != reflect.Struct {
			return reflect.Value{}, false
		}
		first, rest, nested := strings.Cut(key, ".")
		f, ok := fieldByKey(v.Type(), first)
		if !ok {
			return reflect.Value{}, false
		}
		v, key = v.FieldByIndex(f.Index), rest
		if !nested {
			return v, v.Kind() == reflect.String
		}
	}
}

func fieldByKey(t reflect.Type, key string) (components.OptionField, bool) {
	for _, f := range components.OptionFields(t) {
		if f.Key == key {
			return f, true
		}
	}
	return components.OptionField{}, false
}
