package config

import (
	"slices"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/engine"
)

// LogRefusal writes the access-log line of a request the engine refused
// before any route could be chosen (see engine.Server.OnRefused) to the
// config's refusal logs: the server-wide access log (AccessLog) if the
// file sets one; otherwise the log components of the catch-all routes
// (those matching "/" for any host: top-level routes, or the default
// site's), or, when they have none, the first
// log component in the file. Such a request may have no path, host or
// method to route by, and nginx, likewise, logs it in the default server.
// It does not block.
func (c *Config) LogRefusal(rf *engine.Refusal) {
	for _, l := range c.refusalLogs() {
		l.Refused(rf)
	}
}

// refusalLogs returns the logs LogRefusal writes to.
func (c *Config) refusalLogs() []*components.Log {
	if c.AccessLog != nil {
		return []*components.Log{c.AccessLog.Component.(*components.Log)}
	}
	var catchAll []*components.Log
	var first *components.Log
	for _, r := range c.Routes {
		isCatchAll := r.Host == "" && len(r.When) == 0 && slices.Contains(r.Match, "/") && (r.Site == nil || r.Site.Default)
		for _, s := range r.Stages {
			l, ok := s.Component.(*components.Log)
			if !ok {
				continue
			}
			if first == nil {
				first = l
			}
			if isCatchAll && !slices.Contains(catchAll, l) {
				catchAll = append(catchAll, l)
			}
		}
	}
	if catchAll == nil && first != nil {
		return []*components.Log{first}
	}
	return catchAll
}
