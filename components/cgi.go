package components

import (
	"github.com/sluice-server/sluice/cgi"
	"github.com/sluice-server/sluice/pipe"
)

func init() {
	Register(Registration{
		Name: "cgi", Kind: KindSource, Scalar: "script", Paths: []string{"script", "dir", "doc_root"},
		Example: `cgi: {dir: ./cgi-bin, prefix: /cgi-bin/, timeout: 10s}`,
	}, func(o CGIOptions, _ Context) (pipe.Component, error) { return NewCGI(o) })
}

// CGIOptions configures the cgi source: the options of package cgi,
// which a config file sets by their yaml keys. Exactly one of Script and
// Dir is set; the scalar form `cgi: PATH` sets Script.
type CGIOptions struct {
	cgi.Options `yaml:",inline"`
}

// NewCGI returns the cgi source, a *cgi.Gateway: a Source that runs a
// CGI/1.1 program (RFC 3875) for each request, the request's
// meta-variables in its environment, the request body on its stdin, and
// its stdout parsed as a CGI response (header fields, then the body
// streamed to the client, flushed whenever the program pauses). Each
// program runs in its own process group, killed and reaped when the
// request ends, its timeout fires, the client goes or the config is
// retired; at most max_running run at once. See package cgi for the
// gateway in full: the path mapping, the environment, the limits.
//
// It fails for options cgi.New refuses: Script not an executable file,
// Dir not a directory, both or neither set.
func NewCGI(opts CGIOptions) (pipe.Component, error) {
	g, err := cgi.New(opts.Options)
	if err != nil {
		return nil, err
	}
	return g, nil
}
