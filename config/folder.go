package config

import (
	"bytes"
	"fmt"
	"path/filepath"

	"go.yaml.in/yaml/v3"
)

// A Folder describes the server 'sluice serve' runs without a config
// file, from its flags: one route serving the files under a directory.
// Its YAML method writes the config file that stands for it, which is
// then loaded like any other (Loader.Parse), so the flags and a file
// mean the same. The zero value is not useful: Root, Listen and Workers
// are needed.
type Folder struct {
	Root   string // the directory whose files are served; made absolute
	Listen string // the address to listen on, as a listen entry writes it

	// TLSCert and TLSKey, if set, are the PEM files of the certificate
	// (chain) and its private key: the listener serves HTTPS. Made
	// absolute.
	TLSCert, TLSKey string

	Browse   bool // list the files of directories without an index file
	Compress bool // compress responses (the compress filter after files)

	ServerHeader string // the Server field; "" sends none
	Workers      string // worker processes: "N" (ParseWorkers), or "auto"; "0" none
	PidFile      string // the pid file, "" for none; made absolute
	User         string // the user to serve as (the user key), "" for none

	Comment string // the comment at the head of the file, if not ""
}

// YAML returns the config file f stands for: listen (a map with tls if
// TLSCert is set), workers unless none, server_header, pid_file and user if set,
// and one route, match /, whose pipeline is files (with browse if set)
// then compress if set. Paths are absolute, so the file means the same
// wherever it is saved. It fails if a path cannot be made absolute or
// Workers is not a valid count (ParseWorkers; the error names the
// --workers flag that Workers comes from).
func (f *Folder) YAML() ([]byte, error) {
	root, err := filepath.Abs(f.Root)
	if err != nil {
		return nil, err
	}
	w, err := parseWorkersFlag(f.Workers)
	if err != nil {
		return nil, err
	}
	var filesEntry any = map[string]any{"files": root}
	if f.Browse {
		filesEntry = map[string]any{"files": yamlMap("root", root, "browse", true)}
	}
	pipeline := []any{filesEntry}
	if f.Compress {
		pipeline = append(pipeline, "compress")
	}
	var listen any = f.Listen
	if f.TLSCert != "" {
		cert, err := filepath.Abs(f.TLSCert)
		if err != nil {
			return nil, err
		}
		key, err := filepath.Abs(f.TLSKey)
		if err != nil {
			return nil, err
		}
		listen = yamlMap("address", f.Listen, "tls", yamlMap("cert", cert, "key", key))
	}
	top := yamlMap("listen", listen)
	if w != 0 {
		top.Content = append(top.Content, yamlMap("workers", f.Workers).Content...)
	}
	var sh any = f.ServerHeader
	if f.ServerHeader == "" {
		sh = false
	}
	top.Content = append(top.Content, yamlMap("server_header", sh).Content...)
	if f.PidFile != "" {
		pf, err := filepath.Abs(f.PidFile)
		if err != nil {
			return nil, err
		}
		top.Content = append(top.Content, yamlMap("pid_file", pf).Content...)
	}
	if f.User != "" {
		top.Content = append(top.Content, yamlMap("user", f.User).Content...)
	}
	routes := []any{yamlMap("match", "/", "pipeline", pipeline)}
	top.Content = append(top.Content, yamlMap("routes", routes).Content...)
	top.HeadComment = f.Comment

	var b bytes.Buffer
	enc := yaml.NewEncoder(&b)
	enc.SetIndent(2)
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	enc.Close()
	return b.Bytes(), nil
}

// yamlMap builds a YAML mapping node of keys and values, in order.
func yamlMap(kv ...any) *yaml.Node {
	m := &yaml.Node{Kind: yaml.MappingNode}
	for i := 0; i+1 < len(kv); i += 2 {
		var k, v yaml.Node
		k.Encode(kv[i])
		if n, ok := kv[i+1].(*yaml.Node); ok {
			v = *n
		} else {
			v.Encode(kv[i+1])
		}
		m.Content = append(m.Content, &k, &v)
	}
	return m
}

// parseWorkersFlag is ParseWorkers for the --workers flag: its error
// names the flag, as a command line reports it.
func parseWorkersFlag(s string) (int, error) {
	n, err := ParseWorkers(s)
	if err != nil {
		return 0, fmt.Errorf("--workers: %w", err)
	}
	return n, nil
}

// ParseWorkers parses a count of worker processes as a command line
// gives it: "auto" (WorkersAuto), or a number from 0 (none) to
// MaxWorkers written plainly (no sign, no leading zero).
func ParseWorkers(s string) (int, error) {
	if s == "auto" {
		return WorkersAuto, nil
	}
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil || n < 0 || fmt.Sprint(n) != s {
		return 0, fmt.Errorf("want a number of processes (0 for none) or auto, got %q", s)
	}
	if n > MaxWorkers {
		return 0, fmt.Errorf("%d is more than %d", n, MaxWorkers)
	}
	return n, nil
}
