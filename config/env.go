package config

import (
	"fmt"
	"strings"
)

// expand replaces ${VAR} with the value of the environment variable VAR
// and ${VAR:-default} with it, or with default when VAR is unset or
// empty. "$${" is a literal "${"; a "$" not followed by "{" is left as
// is. A variable that is unset and has no default is an error, so a
// forgotten export does not silently become an empty value.
func expand(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		if i > 0 && s[i-1] == '$' { // "$${": an escaped "${"
			b.WriteString(s[:i-1])
			b.WriteString("${")
			s = s[i+2:]
			continue
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", fmt.Errorf("unterminated ${ in %q (write $${ for a literal ${)", s[i:])
		}
		ref := s[i+2 : i+end]
		s = s[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			return "", fmt.Errorf("bad environment variable reference ${%s}: want ${NAME} or ${NAME:-default} (write $${ for a literal ${)", ref)
		}
		v, ok := lookup(name)
		switch {
		case hasDef && v == "":
			v = def
		case !ok:
			return "", fmt.Errorf("environment variable %s is not set (use ${%s:-default} for a default)", name, name)
		}
		b.WriteString(v)
	}
}

func validEnvName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
