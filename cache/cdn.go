package cache

// validCDN reports whether a CDN-Cache-Control value is a valid
// Structured Field Dictionary (RFC 8941 §3.2) whose delta-seconds
// directives hold integers, as RFC 9213 §2.1 requires; a cache ignores
// an invalid one whole and follows Cache-Control.
func validCDN(v string) bool {
	i := skipSP(v, 0)
	if i == len(v) {
		return false
	}
	for {
		start := i
		if i == len(v) || !(v[i] >= 'a' && v[i] <= 'z' || v[i] == '*') {
			return false
		}
		for i < len(v) && isKeyChar(v[i]) {
			i++
		}
		key := v[start:i]
		integer := true
		if i < len(v) && v[i] == '=' {
			var ok bool
			if i, integer, ok = bareItem(v, i+1); !ok {
				return false
			}
		}
		switch key {
		case "max-age", "s-maxage", "stale-while-revalidate", "stale-if-error":
			if !integer {
				return false
			}
		}
		// Parameters.
		for i < len(v) && v[i] == ';' {
			i = skipSP(v, i+1)
			if i == len(v) || !(v[i] >= 'a' && v[i] <= 'z' || v[i] == '*') {
				return false
			}
			for i < len(v) && isKeyChar(v[i]) {
				i++
			}
			if i < len(v) && v[i] == '=' {
				var ok bool
				if i, _, ok = bareItem(v, i+1); !ok {
					return false
				}
			}
		}
		i = skipOWS(v, i)
		if i == len(v) {
			return true
		}
		if v[i] != ',' {
			return false
		}
		i = skipOWS(v, i+1)
		if i == len(v) {
			return false // a trailing comma
		}
	}
}

func isKeyChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*'
}

func skipSP(v string, i int) int {
	for i < len(v) && v[i] == ' ' {
		i++
	}
	return i
}

func skipOWS(v string, i int) int {
	for i < len(v) && (v[i] == ' ' || v[i] == '\t') {
		i++
	}
	return i
}

// bareItem reads an RFC 8941 bare item at v[i:]: it returns the index
// after it, whether it is an integer, and whether it is valid.
func bareItem(v string, i int) (int, bool, bool) {
	if i == len(v) {
		return i, false, false
	}
	switch c := v[i]; {
	case c == '-' || c >= '0' && c <= '9':
		if c == '-' {
			i++
		}
		start, dot := i, -1
		for i < len(v) && (v[i] >= '0' && v[i] <= '9' || v[i] == '.' && dot < 0) {
			if v[i] == '.' {
				dot = i
			}
			i++
		}
		switch {
		case i == start || dot == i-1:
			return i, false, false
		case dot < 0:
			return i, true, i-start <= 15
		}
		return i, false, dot-start <= 12 && i-dot-1 <= 3
	case c == '"':
		for i++; i < len(v); i++ {
			switch {
			case v[i] == '\\':
				i++
				if i == len(v) || v[i] != '"' && v[i] != '\\' {
					return i, false, false
				}
			case v[i] == '"':
				return i + 1, false, true
			case v[i] < 0x20 || v[i] > 0x7e:
				return i, false, false
			}
		}
		return i, false, false
	case c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '*':
		for i++; i < len(v) && isTokenChar(v[i]); i++ {
		}
		return i, false, true
	case c == ':':
		for i++; i < len(v) && v[i] != ':'; i++ {
			if !(v[i] >= 'a' && v[i] <= 'z' || v[i] >= 'A' && v[i] <= 'Z' || v[i] >= '0' && v[i] <= '9' || v[i] == '+' || v[i] == '/' || v[i] == '=') {
				return i, false, false
			}
		}
		return i + 1, false, i < len(v)
	case c == '?':
		return i + 2, false, i+1 < len(v) && (v[i+1] == '0' || v[i+1] == '1')
	}
	return i, false, false
}

// isTokenChar is RFC 8941's sf-token character after the first: tchar,
// ':' or '/'.
func isTokenChar(c byte) bool {
	switch c {
	case '!', '#', '$', '%', '&', '\'', '*', '+', '-', '.', '^', '_', '`', '|', '~', ':', '/':
		return true
	}
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// ValidName reports whether name can name a cache (Options.Name): an
// RFC 8941 sf-token, as Cache-Status wants, such as "Sluice" or
// "edge/pages".
func ValidName(name string) bool { return isSFToken(name) }

// isSFToken reports whether s is an RFC 8941 sf-token, as a cache's name
// in Cache-Status must be (RFC 9211 §2): a letter or '*', then tchar,
// ':' or '/'.
func isSFToken(s string) bool {
	if s == "" || !(s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z' || s[0] == '*') {
		return false
	}
	for i := 1; i < len(s); i++ {
		if !isTokenChar(s[i]) {
			return false
		}
	}
	return true
}
