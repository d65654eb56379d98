package convert_test

import (
	"testing"

	"github.com/sluice-server/sluice/convert"
)

func TestYAML(t *testing.T) {
	files := convert.Step{Name: "files", Arg: convert.Str("./public")}
	for _, tt := range []struct {
		name  string
		cfg   *convert.Config
		want  string
		notes []string
	}{
		{
			name: "empty: one route answering 404",
			cfg:  &convert.Config{},
			want: "routes:\n  - match: /\n    pipeline:\n      - text: {status: 404, body: \"not found\\n\"}\n",
		},
		{
			name: "a site with hosts under sites, a second route for a pattern left out",
			cfg: &convert.Config{
				Listen: []*convert.Listen{{Address: ":80", RedirectToHTTPS: true}, {Address: ":443", ACME: &convert.ACME{Domains: []string{"a.example", "b.example"}}}},
				Sites: []*convert.Site{
					{Hosts: []string{"a.example", "b.example"}, File: "f", Line: 1, Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{files}}}},
					{File: "f", Line: 9, Routes: []*convert.Route{
						{Match: []string{"/x", "/x/"}, Pipeline: []convert.Step{files}, Comment: "both"},
						{Match: []string{"/x/"}, Directive: "location", Line: 12, Pipeline: []convert.Step{{Name: "log"}, files}},
						{Match: []string{"/x/"}, Directive: "location", Line: 15, Pipeline: []convert.Step{files}}, // the same: no note
					}},
				},
			},
			want: `listen:
  - {address: ':80', redirect_to_https: true}
  - address: :443
    tls:
      acme:
        domains: [a.example, b.example]
sites:
  - hosts: [a.example, b.example]
    routes:
      - match: /
        pipeline:
          - files: ./public
routes:
  # both
  - match: [/x, /x/]
    pipeline:
      - files: ./public
`,
			notes: []string{`f:12: directive "location": not translated: a second route for "/x/", which the first one takes`},
		},
		{
			name: "the default site with names; one site for the same hosts; a host named twice",
			cfg: &convert.Config{
				Sites: []*convert.Site{
					{Hosts: []string{"a.example"}, File: "f", Line: 1, Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{files}}}},
					{Hosts: []string{"b.example"}, Default: true, File: "f", Line: 5, Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{{Name: "log"}, files}}}},
					{Hosts: []string{"a.example"}, File: "f", Line: 9, Routes: []*convert.Route{
						{Match: []string{"/"}, Pipeline: []convert.Step{files}}, // the same on another port: no note
						{Match: []string{"/api/"}, Pipeline: []convert.Step{{Name: "echo"}}},
					}},
					{Hosts: []string{"b.example", "c.example"}, File: "f", Line: 20, Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{files}}}},
				},
			},
			want: `sites:
  - hosts: a.example
    routes:
      - match: /
        pipeline:
          - files: ./public
      - match: /api/
        pipeline:
          - echo
  - hosts: b.example
    default: true
    routes:
      - match: /
        pipeline:
          - log
          - files: ./public
  - hosts: c.example
    routes:
      - match: /
        pipeline:
          - files: ./public
`,
			notes: []string{`f:20: directive "server": not translated: host b.example is the site's at f:5: Sluice chooses a site by host, not by address, so this one does not answer it`},
		},
		{
			name: "a site without names is the default; one marked default is named",
			cfg: &convert.Config{
				Sites: []*convert.Site{
					{Hosts: []string{"a.example"}, Default: true, File: "f", Line: 1, Directive: "a.example", Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{files}}}},
					{File: "f", Line: 5, Routes: []*convert.Route{{Match: []string{"/"}, Pipeline: []convert.Step{{Name: "echo"}}}}},
				},
			},
			want: `sites:
  - hosts: a.example
    routes:
      - match: /
        pipeline:
          - files: ./public
routes:
  - match: /
    pipeline:
      - echo
`,
			notes: []string{`f:1: directive "a.example": not translated: the default server: a site without names answers the hosts no site names here`},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, notes := tt.cfg.YAML("")
			if string(got) != tt.want {
				t.Errorf("YAML =\n%s\nwant\n%s", got, tt.want)
			}
			if len(notes) != len(tt.notes) {
				t.Fatalf("notes %v, want %q", notes, tt.notes)
			}
			for i, n := range notes {
				if n.String() != tt.notes[i] {
					t.Errorf("note %q, want %q", n, tt.notes[i])
				}
			}
		})
	}
}
