package config

import (
	"testing"
)

// A header condition on a field that reverse proxies set, which any
// client may send as it likes, is warned about at its name, pointing at
// client, basic_auth and ipfilter; other fields are not.
func TestForwardingHeaderConditionWarns(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		text string
		want []string
	}{
		{"routes:\n  - match: /admin/\n    header: {X-Forwarded-For: \"~ ^10\\\\.\"}\n    pipeline: [{text: a}]\n  - match: /\n    pipeline: [{text: b}]\n",
			[]string{`test.yaml:3:14: warning: header X-Forwarded-For: any client can send this field with the value it likes (a proxy in front adds to it or passes it on), so this condition is no access control: to choose a route by the client's address write client: {addresses: [...], trusted_proxies: [...]}; to guard one, add basic_auth or ipfilter to its pipeline`}},
		{"routes:\n  - match: /\n    header: {x-real-ip: \"*\", Forwarded: null, X-Forwarded-Proto: https, True-Client-IP: \"*\"}\n    pipeline: [{text: a}]\n  - match: /\n    pipeline: [{text: b}]\n",
			[]string{`test.yaml:3:14: warning: header x-real-ip: any client`, `test.yaml:3:30: warning: header Forwarded: any client`,
				`test.yaml:3:47: warning: header X-Forwarded-Proto: any client`, `test.yaml:3:73: warning: header True-Client-IP: any client`}},
		{"routes:\n  - match: /\n    header: {X-Api-Version: \"2\", Authorization: \"*\", X-Forwardedx: \"1\"}\n    pipeline: [{text: a}]\n  - match: /\n    pipeline: [{text: b}]\n", nil},
		{"routes:\n  - match: /\n    query: {X-Forwarded-For: \"1\"}\n    client: {addresses: [10.0.0.0/8], trusted_proxies: [127.0.0.1]}\n    pipeline: [{text: a}]\n  - match: /\n    pipeline: [{text: b}]\n", nil},
	} {
		checkWarnings(t, dir, tt.text, tt.want)
	}
}
