package config

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/pipe"
)

// Warning is something a valid config file is warned about, at a
// position in it: a setting accepted but not acted on, or what a
// component logged at level Warn or above while it was built (an htpasswd
// line whose hash cannot be verified).
type Warning struct {
	File      string // the file name as given to Load or Parse
	Line, Col int    // 1-based
	// Stage is the name of the component that logged the warning while
	// it was built, or "" for a warning about the config's own settings.
	// A component's warning has also gone to the Loader's Context.Logger
	// as it was logged; a server logs the others itself.
	Stage string
	// Msg is the text a server logs for it: the log message, followed for
	// a component's warning by its attributes as key=value.
	Msg string
}

// String formats w as FILE:LINE:COL: warning: message.
func (w *Warning) String() string {
	return fmt.Sprintf("%s:%d:%d: warning: %s", w.File, w.Line, w.Col, w.Msg)
}

// HealthWarning is the warning, and the message a server logs, for a
// health section in a config with no workers to check.
const HealthWarning = "health: checks worker processes, and workers is 0 (or absent): this one process serves alone"

// buildLog records what a component logs at level Warn or above while it
// is built, and passes every record on to the logger the component was
// given. Once the build is over it only passes records on.
type buildLog struct {
	next     slog.Handler // nil: slog.Default's handler of the moment
	attrs    []slog.Attr  // added with WithAttrs, for the records
	building *atomic.Bool
	mu       *sync.Mutex
	records  *[]string
}

// newBuildLog returns the logger to give a component being built, over
// next (nil for slog.Default), and the function that ends the recording
// and returns what was recorded.
func newBuildLog(next *slog.Logger) (*slog.Logger, func() []string) {
	h := &buildLog{building: new(atomic.Bool), mu: new(sync.Mutex), records: new([]string)}
	if next != nil {
		h.next = next.Handler()
	}
	h.building.Store(true)
	return slog.New(h), func() []string {
		h.building.Store(false)
		h.mu.Lock()
		defer h.mu.Unlock()
		return *h.records
	}
}

func (h *buildLog) handler() slog.Handler {
	if h.next == nil {
		return slog.Default().Handler()
	}
	return h.next
}

// Enabled reports true for what a build records even if the logger
// beneath would drop it.
func (h *buildLog) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && h.building.Load() || h.handler().Enabled(ctx, l)
}

// Handle records a warning logged during the build and passes r on.
func (h *buildLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn && h.building.Load() {
		h.mu.Lock()
		*h.records = append(*h.records, recordText(r, h.attrs))
		h.mu.Unlock()
	}
	if next := h.handler(); next.Enabled(ctx, r.Level) {
		return next.Handle(ctx, r)
	}
	return nil
}

func (h *buildLog) WithAttrs(as []slog.Attr) slog.Handler {
	h2 := *h
	h2.next = h.handler().WithAttrs(as)
	h2.attrs = append(h.attrs[:len(h.attrs):len(h.attrs)], as...)
	return &h2
}

func (h *buildLog) WithGroup(name string) slog.Handler {
	h2 := *h
	h2.next = h.handler().WithGroup(name)
	return &h2
}

// recordText is r's message and attributes, those given to the logger
// (pre) first, as slog's text handler writes them, without the time and
// level.
func recordText(r slog.Record, pre []slog.Attr) string {
	var b bytes.Buffer
	th := slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{}
		}
		return a
	}})
	r2 := slog.NewRecord(r.Time, r.Level, "", r.PC)
	r2.AddAttrs(pre...)
	r.Attrs(func(a slog.Attr) bool { r2.AddAttrs(a); return true })
	th.Handle(context.Background(), r2)
	return strings.TrimSpace(r.Message + " " + strings.TrimSpace(b.String()))
}

// warn records a warning at the position of n.
func (p *parser) warn(n *yaml.Node, stage, msg string) {
	n = deref(n)
	p.cfg.Warnings = append(p.cfg.Warnings, &Warning{File: p.file, Line: n.Line, Col: n.Column, Stage: stage, Msg: msg})
}

// sortWarnings orders ws by file, in the order of files, then by
// position, keeping the order of discovery between warnings at the same
// position.
func sortWarnings(ws []*Warning, files []string) {
	slices.SortStableFunc(ws, func(a, b *Warning) int {
		return cmp.Or(cmp.Compare(fileRank(files, a.File), fileRank(files, b.File)),
			cmp.Compare(a.Line, b.Line), cmp.Compare(a.Col, b.Col))
	})
}

// exactOverTree warns about the exact patterns of routes (one router's)
// that name a directory their files or php source serves a tree under:
// "/api" matches the path /api alone, where nginx's "location /api" is a
// prefix, so the files under it go to other routes (files itself answers
// /api with a redirect to /api/, which this route does not match). A
// pattern whose prefix form ("/api/") some route of the same router
// matches is meant, and left alone. at gives each route's node and file.
func (p *parser) exactOverTree(routes []*Route, at []located) {
	prefixes := map[string]bool{}
	for _, r := range routes {
		for _, m := range r.Match {
			if strings.HasSuffix(m, "/") {
				prefixes[m] = true
			}
		}
	}
	for i, r := range routes {
		root, strip := treeRoot(r)
		if root == "" {
			continue
		}
		for _, m := range r.Match {
			if strings.HasSuffix(m, "/") || pipe.PatternKey(m) != m || prefixes[m+"/"] {
				continue
			}
			rest, ok := strings.CutPrefix(m, strip)
			if !ok || rest != "" && rest[0] != '/' && !strings.HasSuffix(strip, "/") {
				continue
			}
			dir := filepath.Join(root, filepath.FromSlash(rest))
			if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
				continue
			}
			restore := p.enter(at[i].src)
			p.warn(matchNode(at[i].n, m), "", fmt.Sprintf("match %q is exact: it takes %s alone, not the files under it in %s (files redirects %s to %s/, which this route does not match); write %q to serve the tree, or [%s, %s/] for both", m, m, dir, m, m, m+"/", m, m))
			restore()
		}
	}
}

// treeRoot returns the directory a route's files or php source serves,
// and the prefix files strips from the path first; "" when it has none
// (or it could not be built).
func treeRoot(r *Route) (root, strip string) {
	for _, s := range r.Stages {
		if s.Component == nil {
			continue
		}
		switch o := s.decoded.(type) {
		case *components.FilesOptions:
			return o.Root, o.StripPrefix
		case *components.PHPOptions:
			return o.Root, ""
		}
	}
	return "", ""
}

// matchNode returns the node of the pattern m in a route's match (a
// pattern or a list of them); the route's node when it cannot be found.
func matchNode(route *yaml.Node, m string) *yaml.Node {
	n := deref(keyValue(route, "match"))
	switch {
	case n == nil:
		return route
	case n.Kind == yaml.ScalarNode:
		return n
	}
	for _, e := range n.Content {
		if deref(e).Value == m {
			return e
		}
	}
	return n
}

// forwardingFields are the header fields, beside X-Forwarded-*, that
// reverse proxies set to name the client, in lower case.
var forwardingFields = []string{"forwarded", "x-real-ip", "x-client-ip", "true-client-ip", "x-cluster-client-ip", "cf-connecting-ip", "fastly-client-ip"}

// forwardingField reports whether the field name is one that reverse
// proxies set to name the client or its request.
func forwardingField(name string) bool {
	n := strings.ToLower(name)
	return strings.HasPrefix(n, "x-forwarded-") || slices.Contains(forwardingFields, n)
}

// forwardingCondition warns about a route's header condition on a field
// that reverse proxies set (X-Forwarded-For, X-Real-IP, Forwarded...),
// at its name n: it reads like the proxy's word, but any client may send
// it with any value, so it guards nothing.
func (p *parser) forwardingCondition(n *yaml.Node) {
	if !forwardingField(n.Value) {
		return
	}
	p.warn(n, "", fmt.Sprintf("header %s: any client can send this field with the value it likes (a proxy in front adds to it or passes it on), so this condition is no access control: to choose a route by the client's address write client: {addresses: [...], trusted_proxies: [...]}; to guard one, add basic_auth or ipfilter to its pipeline", n.Value))
}
