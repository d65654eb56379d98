package config

import (
	"slices"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/upstream"
)

// Each proxy, fastcgi and php entry registers its upstreams as a live
// set: under its name option, or under its route's host and first match,
// with #2… for later routes with the same; when the config is closed,
// the names go.
func TestUpstreamSetNames(t *testing.T) {
	dir := t.TempDir()
	cfg, err := parseString(t, dir, `
routes:
  - match: [/api/, /v1/]
    pipeline: [{proxy: {upstreams: ["http://127.0.0.1:9 weight=3", "http://127.0.0.1:10 drain"], name: cfgtest-api}}]
  - match: /cfgtest-shop/
    methods: [GET]
    pipeline: [{proxy: http://127.0.0.1:9}]
  - match: /cfgtest-shop/
    methods: [POST]
    pipeline: [{proxy: http://127.0.0.1:9}]
  - match: /cfgtest-fcgi/
    host: cfgtest.example
    pipeline: [{fastcgi: {upstreams: ["127.0.0.1:9"], root: ., max_conns: 1}}]
`)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/cfgtest-shop/", "/cfgtest-shop/#2", "cfgtest-api", "cfgtest.example/cfgtest-fcgi/"}
	var got []string
	for _, s := range upstream.Sets() {
		if strings.Contains(s.Name, "cfgtest") {
			got = append(got, s.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("sets %q, want %q", got, want)
	}
	if s, _ := upstream.LookupSet("cfgtest.example/cfgtest-fcgi/"); s.State().Transport != "fastcgi" {
		t.Errorf("the fastcgi set's transport is %q", s.State().Transport)
	}
	if s, _ := upstream.LookupSet("cfgtest-api"); s.State().Hosts[0].Weight != 3 || !s.State().Hosts[1].Draining {
		t.Errorf("weight and drain as the config lists them: %+v", s.State().Hosts)
	}
	cfg.Close()
	for _, name := range want {
		if _, ok := upstream.LookupSet(name); ok {
			t.Errorf("set %q still registered after the config closed", name)
		}
	}
}

// sluice check refuses two entries of one name, at the second's name,
// pointing at the first; and a name that is not a token.
func TestUpstreamSetNameErrors(t *testing.T) {
	for _, tc := range []struct{ name, routes, want string }{
		{"twice", `
  - match: /a/
    pipeline: [{proxy: {upstreams: [http://127.0.0.1:9], name: cfgdup}}]
  - match: /b/
    pipeline: [{proxy: {upstreams: [http://127.0.0.1:9], name: cfgdup}}]`,
			`test.yaml:5:64: proxy: name "cfgdup" is already the name of the upstreams at 3:64: give each proxy, fastcgi and php entry a name of its own`},
		{"not a token", `
  - match: /a/
    pipeline: [{proxy: {upstreams: [http://127.0.0.1:9], name: "my api"}}]`,
			`proxy: name "my api": want a token of letters, digits and - _ . (such as api or php-pool)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseString(t, t.TempDir(), "routes:"+tc.routes+"\n")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if _, ok := upstream.LookupSet("cfgdup"); ok {
				t.Error("a config refused left its set registered")
			}
		})
	}
}
