package config

import (
	"html/template"
	"os"
	"path/filepath"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/pipe"
)

// errorPagesExample is the shape of an error_pages map, for messages.
const errorPagesExample = "error_pages: {404: ./errors/404.html, 5xx: ./errors/5xx.html}"

// errorPages parses an error_pages map (the server's, or a route's when
// label says so): each key a status or class, each value an HTML template
// file relative to the config file, parsed now. An empty map gives error
// pages with no page. It returns nil when the map is unusable (the errors
// are recorded).
func (p *parser) errorPages(n *yaml.Node, label string) *pipe.ErrorPages {
	n = deref(n)
	if isNull(n) || n.Kind != yaml.MappingNode {
		p.errorf(n, "%s: want a map from a status (404) or class (4xx, 5xx) to an HTML file, e.g. %s", label, errorPagesExample)
		return nil
	}
	pairs, ok := p.mapping(n, label+" key", nil)
	if !ok {
		return nil
	}
	pages := map[string]*template.Template{}
	for _, kv := range pairs {
		key := kv.key.Value
		if key != "4xx" && key != "5xx" {
			if _, err := pipe.ParseErrorStatus(key); err != nil {
				p.errorf(kv.key, "%s: %q is not an error status: want a status from 400 to 599, or 4xx or 5xx", label, key)
				continue
			}
		}
		s, ok := p.scalar(kv.val, label+"."+key, "an HTML file")
		if !ok {
			continue
		}
		if s == "" {
			p.errorf(kv.val, "%s.%s: want an HTML file, got an empty string", label, key)
			continue
		}
		file := p.path(s)
		data, err := os.ReadFile(file)
		if err != nil {
			p.errorf(kv.val, "%s.%s: %v", label, key, err)
			continue
		}
		t, err := template.New(filepath.Base(file)).Parse(string(data))
		if err != nil {
			p.errorf(kv.val, "%s.%s: %v", label, key, err)
			continue
		}
		// Rendered once now, so a field the data lacks is an error here.
		if err := pipe.CheckErrorPage(t); err != nil {
			p.errorf(kv.val, "%s.%s: %v", label, key, err)
			continue
		}
		pages[key] = t
	}
	ep, err := pipe.NewErrorPages(pages)
	if err != nil {
		p.errorf(n, "%s: %v", label, err)
		return nil
	}
	return ep
}
