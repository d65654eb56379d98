package config

import (
	"cmp"
	"fmt"

	"github.com/sluice-server/sluice/components"
)

// accessLogNotes warns about the routes whose log adds to access_log
// without saying so (no replace key): before a route's log added to it,
// it replaced it, and a file written for an older Sluice may count on
// that. Writing replace, true or false, silences the note; a route log
// naming access_log's own file without replace: true would write each of
// its requests there twice, and is warned about whatever it says.
func (p *parser) accessLogNotes() {
	if p.cfg.AccessLog == nil {
		return
	}
	server, _ := p.cfg.AccessLog.decoded.(*components.LogOptions)
	for _, r := range p.cfg.Routes {
		for _, s := range r.Stages {
			o, ok := s.decoded.(*components.LogOptions)
			if !ok || s.Name != "log" || o.Replace {
				continue
			}
			w := &Warning{File: cmp.Or(r.File, p.file), Line: s.Line, Col: s.Col, Stage: s.Name}
			switch {
			case server != nil && logSameFile(o.File, server.File):
				w.Msg = fmt.Sprintf("log: writes to %s, as access_log does, and adds to it: each request of this route would be written there twice; write `replace: true` to have this log alone record them, or remove it", logFileName(o.File))
			case !hasOption(s.Options, "replace"):
				w.Msg = "log: this route's requests are written to access_log too, as a route's log adds to it (it used to replace it); write `replace: true` to keep them out of access_log, or `replace: false` to keep both and silence this note"
			default:
				continue
			}
			p.cfg.Warnings = append(p.cfg.Warnings, w)
		}
	}
}

// logSameFile reports whether two log files' names (as decoded, relative
// paths resolved) name the same file or stream.
func logSameFile(a, b string) bool {
	return logFileName(a) == logFileName(b)
}

// logFileName names a log's file as LogOptions.File does, a stream by
// one name.
func logFileName(f string) string {
	switch f {
	case "", "-", "stdout":
		return "stdout"
	}
	return f
}

func hasOption(opts []Option, key string) bool {
	for _, o := range opts {
		if o.Key == key {
			return true
		}
	}
	return false
}

// LogRotations returns the files the config's access logs rotate by size
// (access_log's and the log components', max_size set), by path, with
// their rotation: a master whose workers write them rotates them (see
// components.LogRotator). Where two logs name one file, the last in the
// file sets its rotation.
func (c *Config) LogRotations() map[string]components.LogRotation {
	out := map[string]components.LogRotation{}
	for _, comp := range c.components() {
		if l, ok := comp.(*components.Log); ok {
			if file, rot, ok := l.Rotation(); ok {
				out[file] = rot
			}
		}
	}
	return out
}
