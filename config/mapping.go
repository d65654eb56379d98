package config

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/sluice-server/sluice/components"
)

// fileMapping reports a pipeline whose htaccess and files map request
// paths to different files: the access files applied would then not be
// those of the directories files serves from. Each maps a path under its
// strip_prefix P to its root R joined with the rest of the path, so two
// agree when one prefix extends the other by a tail T and the root of the
// shorter prefix joined with T is the root of the longer.
func (p *parser) fileMapping(r *Route) {
	var access, served *Stage
	for _, s := range r.Stages {
		switch s.decoded.(type) {
		case *components.HtaccessOptions:
			access = s
		case *components.FilesOptions:
			served = s
		}
	}
	if access == nil || served == nil || access.Component == nil || served.Component == nil {
		return
	}
	ho := access.decoded.(*components.HtaccessOptions)
	fo := served.decoded.(*components.FilesOptions)
	if fo.Root == "" || sameMapping(ho.Root, ho.StripPrefix, fo.Root, fo.StripPrefix) {
		return
	}
	p.errorf(&yaml.Node{Line: access.Line, Column: access.Col},
		"htaccess and files (at %d:%d) map request paths to different files (htaccess: root %s, strip_prefix %q; files: root %s, strip_prefix %q), so the access files applied are not those of the files served: give both the same root and strip_prefix",
		served.Line, served.Col, ho.Root, ho.StripPrefix, fo.Root, fo.StripPrefix)
}

// sameMapping reports whether root1 with prefix1 stripped and root2 with
// prefix2 stripped map every path under both prefixes to the same file.
func sameMapping(root1, prefix1, root2, prefix2 string) bool {
	if len(prefix1) > len(prefix2) {
		root1, prefix1, root2, prefix2 = root2, prefix2, root1, prefix1
	}
	tail, ok := strings.CutPrefix(prefix2, prefix1)
	if !ok || tail != "" && tail[0] != '/' {
		return false // no path is under both
	}
	a, err1 := filepath.Abs(filepath.Join(root1, filepath.FromSlash(tail)))
	b, err2 := filepath.Abs(root2)
	return err1 == nil && err2 == nil && a == b
}
