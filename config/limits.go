package config

import (
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/engine"
)

// The kinds of limit value.
const (
	limitSize = iota
	limitCount
	limitDuration
	limitRate
)

// limit is one key of the limits section and the engine.Limits field it
// sets.
type limit struct {
	key     string
	kind    int
	field   string // engine.Limits field name
	off     string // the word meaning -1 (no limit), if allowed
	doc     string
	deflt   string
	example string
}

// limits lists the keys of the limits section, in the order of the docs.
var limits = []limit{
	{"max_target", limitSize, "MaxTargetBytes", "", "longest request-target (URI); longer gets 414", FormatSize(engine.DefaultMaxTargetBytes), "4KiB"},
	{"max_header", limitSize, "MaxHeaderBytes", "", "largest request line plus header section; larger gets 431", FormatSize(engine.DefaultMaxHeaderBytes), "32KiB"},
	{"max_header_count", limitCount, "MaxHeaderCount", "", "most header fields; more gets 431", strconv.Itoa(engine.DefaultMaxHeaderCount), "50"},
	{"max_body", limitSize, "MaxBodyBytes", "unlimited", "largest request body; larger gets 413", FormatSize(engine.DefaultMaxBodyBytes), "100MiB"},
	{"max_drain", limitSize, "MaxDrainBytes", "", "unread body discarded to keep a connection alive; more closes it", FormatSize(engine.DefaultMaxDrainBytes), "64KiB"},
	{"header_timeout", limitDuration, "HeaderTimeout", "", "time to receive the request line and header", FormatDuration(engine.DefaultHeaderTimeout), "5s"},
	{"idle_timeout", limitDuration, "IdleTimeout", "", "keep-alive wait for the next request while under half of max_conns are open", FormatDuration(engine.DefaultIdleTimeout), "30s"},
	{"busy_idle_timeout", limitDuration, "BusyIdleTimeout", "", "keep-alive wait once over half of max_conns are open", FormatDuration(engine.DefaultBusyIdleTimeout), "1s"},
	{"body_timeout", limitDuration, "BodyTimeout", "", "grace period for a request body before min_body_rate applies", FormatDuration(engine.DefaultBodyTimeout), "20s"},
	{"min_body_rate", limitRate, "MinBodyRate", "off", "slowest body upload, or HTTP/2 window a client grants a response, tolerated after body_timeout, bytes per second", FormatSize(engine.DefaultMinBodyRate) + "/s", "4KiB/s"},
	{"write_timeout", limitDuration, "WriteTimeout", "", "longest wait for a client to take response bytes", FormatDuration(engine.DefaultWriteTimeout), "1m"},
	{"max_streams", limitCount, "MaxStreams", "", "most HTTP/2 streams open at once on one connection (SETTINGS_MAX_CONCURRENT_STREAMS)", strconv.Itoa(engine.DefaultMaxStreams), "250"},
	{"max_conns", limitCount, "MaxConns", "", "most open connections; at the limit idle ones are closed to admit new ones", strconv.Itoa(engine.DefaultMaxConns) + " (or 3/4 of the file limit)", "20000"},
}

// LimitKeys are the keys of the limits section.
var LimitKeys = func() []string {
	var keys []string
	for _, l := range limits {
		keys = append(keys, l.key)
	}
	return keys
}()

func (p *parser) limits(n *yaml.Node) {
	pairs, _ := p.mapping(n, "limits key", LimitKeys)
	lv := reflect.ValueOf(&p.cfg.Limits).Elem()
	for _, kv := range pairs {
		var l limit
		for _, x := range limits {
			if x.key == kv.key.Value {
				l = x
			}
		}
		name := "limits." + l.key
		s, ok := p.scalar(kv.val, name, "a value")
		if !ok {
			continue
		}
		var v int64
		var err error
		off := l.off != "" && (s == l.off || s == "-1")
		switch {
		case off:
			v = -1
		case l.kind == limitDuration:
			var d time.Duration
			d, err = ParseDuration(s)
			v = int64(d)
		case l.kind == limitCount:
			if v, err = strconv.ParseInt(s, 10, 64); err != nil {
				err = errors.New("want a whole number")
			}
		default: // a size, or a rate in bytes per second
			v, err = ParseSize(strings.TrimSuffix(s, "/s"))
		}
		f := lv.FieldByName(l.field)
		switch {
		case err != nil:
		case !off && v <= 0 && l.off != "":
			err = fmt.Errorf("must be more than 0 (or %s); leave it out for the default, %s", l.off, l.deflt)
		case !off && v <= 0:
			err = fmt.Errorf("must be more than 0; leave it out for the default, %s", l.deflt)
		case f.OverflowInt(v):
			err = errors.New("too large")
		}
		if err != nil {
			p.errorf(kv.val, "%s: %v, got %q", name, err, s)
			continue
		}
		f.SetInt(v)
		p.cfg.LimitsSet = append(p.cfg.LimitsSet, l.key)
	}
}

// LimitValue returns the value of the limits key as a config file writes
// it ("16KiB", "10s", "unlimited"), and whether c sets it.
func (c *Config) LimitValue(key string) (string, bool) {
	if !contains(c.LimitsSet, key) {
		return "", false
	}
	for _, l := range limits {
		if l.key != key {
			continue
		}
		v := reflect.ValueOf(c.Limits).FieldByName(l.field).Int()
		switch {
		case v == -1:
			return l.off, true
		case l.kind == limitDuration:
			return FormatDuration(time.Duration(v)), true
		case l.kind == limitCount:
			return strconv.FormatInt(v, 10), true
		case l.kind == limitRate:
			return FormatSize(v) + "/s", true
		}
		return FormatSize(v), true
	}
	return "", false
}
