package cgi

import (
	"strings"

	"github.com/sluice-server/sluice/engine"
)

// environ builds the program's environment: Options.Env, then the
// request's meta-variables (Vars). user is the name an authentication
// component admitted (REMOTE_USER), or "".
func (g *Gateway) environ(r *engine.Request, user string, t target, length int64) []string {
	env := make([]string, 0, len(g.env)+24+len(r.Fields))
	env = append(env, g.env...)
	m := Meta{
		ScriptName:     t.scriptName,
		ScriptFilename: t.script,
		PathInfo:       t.pathInfo,
		PathTranslated: t.translated,
		DocumentRoot:   g.docRoot,
		ServerName:     g.host,
		User:           user,
		ContentLength:  length,
	}
	Vars(r, &m, nil, func(name string, value []byte) {
		env = append(env, name+"="+string(value))
	})
	return env
}

// splitHostPort splits "host:port", "[v6]:port", "host" or "[v6]".
func splitHostPort(s string) (host, port string) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 || strings.IndexByte(s[i:], ']') >= 0 {
		return s, ""
	}
	if strings.IndexByte(s[:i], ':') >= 0 && !strings.HasPrefix(s, "[") {
		return s, "" // a bare IPv6 address
	}
	return s[:i], s[i+1:]
}
