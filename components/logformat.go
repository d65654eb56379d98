package components

import (
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/upstream"
)

// An access log's format is compiled once, when the Log is made, into a
// list of items: the literal text before a field, and the field. A line
// is the items appended in turn into a pooled buffer, each field by a
// switch on its id, so that formatting a line allocates nothing.

// logField identifies a field of an access log line.
type logField uint8

const (
	lfNone logField = iota // no field: the literal text after the last one
	lfRemote
	lfUser
	lfTime
	lfTimeISO
	lfTimeUnix
	lfDuration
	lfRequest
	lfMethod
	lfURI
	lfPath
	lfQuery
	lfProto
	lfHost
	lfStatus
	lfBytes
	lfBodyBytes
	lfReferer
	lfUserAgent
	lfCacheStatus
	lfUpstreamAddr
	lfUpstreamTime
	lfTLSVersion
	lfTLSCipher
	lfRequestID
	lfReqHeader
	lfRespHeader
)

// LogField describes a field an access log's format may name (see
// LogOptions.Format): its name and what it holds. The config
// documentation's table of fields is generated from LogFields.
type LogField struct {
	Name string // as written in a format: {Name}, or a JSON key
	Doc  string // what the field holds, for the documentation
}

// logFieldDefs lists the named fields, in the order the documentation
// gives them; req.NAME and resp.NAME are apart (see LogFields).
var logFieldDefs = []struct {
	id logField
	LogField
	number bool // a JSON number (or null), not a string
}{
	{lfRemote, LogField{"remote", "the client's address: the TCP peer's, or the one a trusted proxy gives (trusted_proxies)"}, false},
	{lfUser, LogField{"user", "the user name of Basic credentials, whether or not they were accepted (a space is escaped as \\x20)"}, false},
	{lfTime, LogField{"time", "when the request arrived, local time: 10/Oct/2000:13:55:36 -0700 in text, 2000-10-10T13:55:36.000-07:00 in JSON"}, false},
	{lfTimeISO, LogField{"time_iso", "when the request arrived, local time, ISO 8601 with milliseconds: 2000-10-10T13:55:36.000-07:00"}, false},
	{lfTimeUnix, LogField{"time_unix", "when the request arrived, seconds since 1970 with milliseconds: 971211336.000"}, true},
	{lfDuration, LogField{"duration_ms", "milliseconds from the request's arrival to the end of its response, to the microsecond: 1.234"}, true},
	{lfRequest, LogField{"request", "the request line: GET /a?b HTTP/1.1; for a request the server refused, the raw line received"}, false},
	{lfMethod, LogField{"method", "the request method"}, false},
	{lfURI, LogField{"uri", "the request target as received: path and query, not decoded"}, false},
	{lfPath, LogField{"path", "the canonical path the routes matched (decoded, dot segments removed)"}, false},
	{lfQuery, LogField{"query", "the query, without '?'"}, false},
	{lfProto, LogField{"proto", "the protocol: HTTP/1.0, HTTP/1.1 or HTTP/2.0"}, false},
	{lfHost, LogField{"host", "the host the request named (Host or :authority)"}, false},
	{lfStatus, LogField{"status", "the response status"}, true},
	{lfBytes, LogField{"bytes", "the response body's bytes at the log's place in the pipeline; in text, - for none (the Common Log Format's %b)"}, true},
	{lfBodyBytes, LogField{"body_bytes_sent", "the response body's bytes at the log's place in the pipeline, 0 for none (the header's bytes are not counted)"}, true},
	{lfReferer, LogField{"referer", "the Referer field (as req.Referer)"}, false},
	{lfUserAgent, LogField{"user_agent", "the User-Agent field (as req.User-Agent)"}, false},
	{lfCacheStatus, LogField{"cache_status", "what a cache after the log did: HIT, STALE, REVALIDATED, COLLAPSED, MISS or PASS; empty when no cache saw the request"}, false},
	{lfUpstreamAddr, LogField{"upstream_addr", "the address of the upstream (proxy, fastcgi, php) that answered: 127.0.0.1:9000, or unix:/run/app.sock"}, false},
	{lfUpstreamTime, LogField{"upstream_time_ms", "milliseconds from sending the request upstream (its first attempt, or its leaving the max_conns queue) to the end of the response of the upstream that answered, as nginx's $upstream_response_time; empty (JSON null) without one"}, true},
	{lfTLSVersion, LogField{"tls_version", "the TLS version (TLSv1.2, TLSv1.3); empty over plain HTTP"}, false},
	{lfTLSCipher, LogField{"tls_cipher", "the TLS cipher suite (TLS_AES_128_GCM_SHA256); empty over plain HTTP"}, false},
	{lfRequestID, LogField{"request_id", "the request's ID (request_id): a trusted proxy's or one made for it, as passed upstream and named in the error log's lines about the request; empty for a request the server refused, or with request_id: false"}, false},
}

// LogFields lists the fields an access log's format may name, in the
// order the documentation gives them, then req.NAME and resp.NAME. The
// slice is shared: do not modify it.
var LogFields = func() []LogField {
	var out []LogField
	for _, d := range logFieldDefs {
		out = append(out, d.LogField)
	}
	return append(out,
		LogField{"req.NAME", "the request field NAME (any field name: req.X-Request-Id); several are joined by \", \""},
		LogField{"resp.NAME", "the response field NAME (resp.Content-Type) as the pipeline set it: not those the server adds itself (Date, Server, a Content-Length it computed)"})
}()

// logItem is one field of a compiled format, with the literal text that
// comes before it.
type logItem struct {
	lit    string   // text before the field: in JSON, `"key":` and the comma before it
	field  logField // lfNone: lit is the end of the line
	header string   // the field name of lfReqHeader and lfRespHeader
	number bool
}

// logFormat is a compiled format.
type logFormat struct {
	items []logItem
	json  bool
	// apache: escape as Apache does (\", \\, \n, \r, \t, \xhh), as the
	// presets always have; otherwise as nginx does (\xHH for '"', '\\',
	// control and non-ASCII bytes).
	apache bool
	// preset json: a "cache" member when a cache saw the request, a
	// "request_id" member when the request has an ID, a "request"
	// member with the raw line of a refused request.
	jsonExtras   bool
	upstreamTime bool // a field needs upstream.TimeKey asked for
}

// The presets, in the same terms as a format of one's own.
const (
	logFormatCommon   = `{remote} - {user} [{time}] "{request}" {status} {bytes}`
	logFormatCombined = logFormatCommon + ` "{referer}" "{user_agent}"`
)

var logJSONPreset = []string{"time", "remote", "user", "method", "uri", "proto", "host", "status", "bytes", "referer", "user_agent", "duration_ms"}

// logFieldNames is the list of known names, for errors.
func logFieldNames() string {
	var names []string
	for _, f := range LogFields {
		names = append(names, f.Name)
	}
	return strings.Join(names, ", ")
}

// lookupLogField returns the item for a field name.
func lookupLogField(name string) (logItem, error) {
	for _, d := range logFieldDefs {
		if d.Name == name {
			return logItem{field: d.id, number: d.number}, nil
		}
	}
	for _, h := range []struct {
		prefix string
		id     logField
	}{{"req.", lfReqHeader}, {"resp.", lfRespHeader}} {
		if rest, ok := strings.CutPrefix(name, h.prefix); ok {
			if !httpgrammar.IsToken(rest) {
				return logItem{}, fmt.Errorf("log: %q: a field name after %q must be a token (letters, digits, '-'…), e.g. %sUser-Agent", name, h.prefix, h.prefix)
			}
			return logItem{field: h.id, header: rest}, nil
		}
	}
	for _, d := range logFieldDefs {
		if strings.EqualFold(d.Name, name) {
			return logItem{}, fmt.Errorf("log: unknown field %q: names are lower case, write %s", name, d.Name)
		}
	}
	return logItem{}, fmt.Errorf("log: unknown field %q; the fields are %s", name, logFieldNames())
}

// compileLogText compiles a text format: literal text with {name} fields;
// {{ and }} stand for { and }.
func compileLogText(s string, apache bool) (*logFormat, error) {
	f := &logFormat{apache: apache}
	var lit strings.Builder
	for i := 0; i < len(s); {
		switch ch := s[i]; {
		case ch == '{' && strings.HasPrefix(s[i:], "{{"), ch == '}' && strings.HasPrefix(s[i:], "}}"):
			lit.WriteByte(ch)
			i += 2
		case ch == '}':
			return nil, fmt.Errorf("log: format %q: a '}' at byte %d closes no field: write }} for a literal brace", s, i)
		case ch == '{':
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				return nil, fmt.Errorf("log: format %q: the field at byte %d has no closing '}': write {name}, or {{ for a literal brace", s, i)
			}
			it, err := lookupLogField(strings.TrimSpace(s[i+1 : i+end]))
			if err != nil {
				return nil, err
			}
			it.lit = lit.String()
			lit.Reset()
			f.items = append(f.items, it)
			i += end + 1
		default:
			if ch == '\n' || ch == '\r' {
				return nil, fmt.Errorf("log: format %q: a line end in the format would split the line; the log ends each line itself", s)
			}
			lit.WriteByte(ch)
			i++
		}
	}
	if len(f.items) == 0 {
		return nil, fmt.Errorf("log: format %q names no field: write one or more {name}; the fields are %s", s, logFieldNames())
	}
	f.items = append(f.items, logItem{lit: lit.String()})
	f.finish()
	return f, nil
}

// compileLogJSON compiles a JSON format: one member per field, the field's
// name its key.
func compileLogJSON(names []string) (*logFormat, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("log: fields is empty: list the fields of each JSON line; the fields are %s", logFieldNames())
	}
	f := &logFormat{json: true}
	seen := map[string]bool{}
	for i, name := range names {
		if seen[name] {
			return nil, fmt.Errorf("log: field %q is listed twice: a JSON line has each key once", name)
		}
		seen[name] = true
		it, err := lookupLogField(name)
		if err != nil {
			return nil, err
		}
		key := appendJSONString(nil, []byte(name))
		if i == 0 {
			it.lit = "{" + string(key) + ":"
		} else {
			it.lit = "," + string(key) + ":"
		}
		f.items = append(f.items, it)
	}
	f.items = append(f.items, logItem{lit: "}"})
	f.finish()
	return f, nil
}

func (f *logFormat) finish() {
	for _, it := range f.items {
		if it.field == lfUpstreamTime {
			f.upstreamTime = true
		}
	}
}

// compileLogFormat compiles LogOptions' Format, Fields and CacheStatus.
func compileLogFormat(format string, fields []string, cacheStatus bool) (*logFormat, error) {
	lower := strings.ToLower(format)
	if len(fields) > 0 && lower != "json" {
		return nil, fmt.Errorf("log: fields choose the members of JSON lines: set format: json with them, or name the fields in a text format (format: \"{remote} {status}\")")
	}
	if cacheStatus && lower != "" && lower != "common" && lower != "combined" && lower != "json" {
		return nil, fmt.Errorf("log: cache_status adds a column to the common and combined formats: in a format of your own, write {cache_status} where it goes")
	}
	switch lower {
	case "", "combined", "common":
		s := logFormatCombined
		if lower == "common" {
			s = logFormatCommon
		}
		if cacheStatus {
			s += " {cache_status}"
		}
		return compileLogText(s, true)
	case "json":
		if len(fields) > 0 {
			if cacheStatus {
				return nil, fmt.Errorf("log: cache_status with fields: list cache_status among the fields instead")
			}
			return compileLogJSON(fields)
		}
		f, err := compileLogJSON(logJSONPreset)
		if err == nil {
			f.jsonExtras = true
		}
		return f, err
	}
	if !strings.Contains(format, "{") {
		return nil, fmt.Errorf("log: unknown format %q: want common, combined, json, or a format of your own naming fields in braces, e.g. \"{remote} {method} {uri} {status}\"", format)
	}
	return compileLogText(format, false)
}

// logEntry is what a line is made of: the request, and what its response
// was. It lives on the stack of Log.emit.
type logEntry struct {
	l           *Log
	r           *engine.Request
	rf          *engine.Refusal // a refused request, or nil
	c           *pipe.Conn      // nil for a refused request
	status      int
	start, now  time.Time
	n           int64
	cacheStatus string
}

// append appends the line of e, without its line end.
func (f *logFormat) append(b []byte, e *logEntry) []byte {
	for i := range f.items {
		it := &f.items[i]
		if f.jsonExtras && it.field == lfNone {
			// The preset's own members, before the closing brace.
			if e.cacheStatus != "" {
				b = append(b, `,"cache":`...)
				b = appendJSONString(b, e.cacheStatus)
			}
			if e.c != nil {
				if id := e.c.RequestID(); id != nil {
					b = append(b, `,"request_id":`...)
					b = appendJSONString(b, id)
				}
			}
			if e.rf != nil {
				b = append(b, `,"request":`...)
				b = appendJSONString(b, e.rf.Line)
			}
		}
		b = append(b, it.lit...)
		if it.field != lfNone {
			b = f.appendField(b, it, e)
		}
	}
	return b
}

// value appends a string value, escaped for the format: in text, "-" when
// empty; in JSON, a JSON string.
func logValue[T ~string | ~[]byte](f *logFormat, b []byte, s T) []byte {
	switch {
	case f.json:
		return appendJSONString(b, s)
	case len(s) == 0:
		return append(b, '-')
	case f.apache:
		return appendLogField(b, s)
	}
	return appendNginxField(b, s)
}

func (f *logFormat) appendField(b []byte, it *logItem, e *logEntry) []byte {
	r := e.r
	switch it.field {
	case lfRemote:
		a := e.l.client.Addr(r)
		if f.json {
			b = append(b, '"')
			if a.IsValid() {
				b = a.AppendTo(b)
			}
			return append(b, '"')
		}
		return appendLogAddr(b, a)
	case lfUser:
		user := logUser(r)
		if f.json {
			return appendJSONString(b, user)
		}
		if len(user) == 0 {
			return append(b, '-')
		}
		return appendLogWord(b, user, f.apache)
	case lfTime, lfTimeISO:
		if f.json {
			b = append(b, '"')
		}
		if it.field == lfTime && !f.json {
			b = e.start.AppendFormat(b, "02/Jan/2006:15:04:05 -0700")
		} else {
			b = e.start.AppendFormat(b, "2006-01-02T15:04:05.000Z07:00")
		}
		if f.json {
			b = append(b, '"')
		}
		return b
	case lfTimeUnix:
		ms := e.start.UnixMilli()
		b = strconv.AppendInt(b, ms/1000, 10)
		b = append(b, '.')
		return appendPadded3(b, ms%1000)
	case lfDuration:
		return strconv.AppendFloat(b, float64(e.now.Sub(e.start).Microseconds())/1000, 'f', 3, 64)
	case lfRequest:
		if e.rf != nil {
			return logValue(f, b, e.rf.Line)
		}
		if f.json {
			b = append(b, '"')
			b = appendJSONBody(b, r.Method)
			b = append(b, ' ')
			b = appendJSONBody(b, r.Target)
			b = append(b, ' ')
			b = append(b, r.Proto()...)
			return append(b, '"')
		}
		b = logEscape(f, b, r.Method)
		b = append(b, ' ')
		b = logEscape(f, b, r.Target)
		b = append(b, ' ')
		return append(b, r.Proto()...)
	case lfMethod:
		return logValue(f, b, r.Method)
	case lfURI:
		return logValue(f, b, r.Target)
	case lfPath:
		return logValue(f, b, r.Path)
	case lfQuery:
		return logValue(f, b, r.Query)
	case lfProto:
		if r.Method == nil { // a refused request whose line did not parse
			return logValue(f, b, "")
		}
		return logValue(f, b, r.Proto())
	case lfHost:
		return logValue(f, b, r.Host)
	case lfStatus:
		return strconv.AppendInt(b, int64(e.status), 10)
	case lfBytes:
		if e.n == 0 && !f.json {
			return append(b, '-')
		}
		return strconv.AppendInt(b, e.n, 10)
	case lfBodyBytes:
		return strconv.AppendInt(b, e.n, 10)
	case lfReferer:
		return logValue(f, b, r.Header("Referer"))
	case lfUserAgent:
		return logValue(f, b, r.Header("User-Agent"))
	case lfCacheStatus:
		if !f.json && e.cacheStatus != "" {
			return appendLogWord(b, e.cacheStatus, f.apache)
		}
		return logValue(f, b, e.cacheStatus)
	case lfUpstreamAddr:
		return logValue(f, b, e.value(upstream.AddrKey))
	case lfUpstreamTime:
		v := e.value(upstream.TimeKey)
		if v == "" || v == upstream.TimeAsked {
			if f.json {
				return append(b, "null"...)
			}
			return append(b, '-')
		}
		return logEscape(f, b, v) // digits and a point, from the upstream package
	case lfTLSVersion:
		if r.TLS == nil {
			return logValue(f, b, "")
		}
		return logValue(f, b, tlsVersionName(r.TLS.Version))
	case lfTLSCipher:
		if r.TLS == nil {
			return logValue(f, b, "")
		}
		return logValue(f, b, tls.CipherSuiteName(r.TLS.CipherSuite))
	case lfRequestID:
		if e.c == nil {
			return logValue(f, b, "")
		}
		return logValue(f, b, e.c.RequestID())
	case lfReqHeader:
		return logValue(f, b, r.HeaderList(it.header))
	case lfRespHeader:
		if e.c == nil {
			return logValue(f, b, "")
		}
		h := e.c.Header()
		if httpgrammar.EqualFold(it.header, "Content-Length") {
			if n := h.ContentLength(); n >= 0 {
				if f.json {
					b = append(b, '"')
					b = strconv.AppendInt(b, n, 10)
					return append(b, '"')
				}
				return strconv.AppendInt(b, n, 10)
			}
			return logValue(f, b, "")
		}
		return logValue(f, b, h.Get(it.header))
	}
	return b
}

// value returns the per-request value key, or "" for a refused request.
func (e *logEntry) value(key string) string {
	if e.c == nil {
		return ""
	}
	return e.c.Value(key)
}

// logEscape appends s escaped for the format, without the quotes of JSON
// or the "-" of an empty text value.
func logEscape[T ~string | ~[]byte](f *logFormat, b []byte, s T) []byte {
	switch {
	case f.json:
		return appendJSONBody(b, s)
	case f.apache:
		return appendLogField(b, s)
	}
	return appendNginxField(b, s)
}

// appendPadded3 appends n (0 to 999) in three digits.
func appendPadded3(b []byte, n int64) []byte {
	return append(b, byte('0'+n/100), byte('0'+n/10%10), byte('0'+n%10))
}

// tlsVersionName names a TLS version as nginx's $ssl_protocol does.
func tlsVersionName(v uint16) string {
	switch v {
	case tls.VersionTLS13:
		return "TLSv1.3"
	case tls.VersionTLS12:
		return "TLSv1.2"
	case tls.VersionTLS11:
		return "TLSv1.1"
	case tls.VersionTLS10:
		return "TLSv1"
	}
	return "unknown"
}

// appendNginxField appends s escaped as nginx escapes a variable in a
// log line: '"', '\\', control bytes and bytes past ASCII as \xHH.
func appendNginxField[T ~string | ~[]byte](b []byte, s T) []byte {
	const hex = "0123456789ABCDEF"
	for len(s) > 0 {
		i := logSafeRun(s)
		b = append(b, s[:i]...)
		if i == len(s) {
			break
		}
		ch := s[i]
		s = s[i+1:]
		b = append(b, '\\', 'x', hex[ch>>4], hex[ch&15])
	}
	return b
}
