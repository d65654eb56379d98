package daemon

import (
	"fmt"
	"testing"
)

// redirect_to_https builds its Location from the client's Host, so it
// redirects only the hosts the config serves over HTTPS: the names and
// addresses of its certificates (a wildcard for its subdomains) and the
// hosts of its routes. Any other host (a made-up name: the redirect
// would send the client there) gets 421. A config that names no host
// redirects any.
func TestRedirectToHTTPSOnlyServedHosts(t *testing.T) {
	site := newTLSSite(t)
	site.ca.IssueFiles(t, site.dir, "c.example", "*.wild.example", "192.0.2.7")
	writeFile(t, site.file, `listen:
  - {address: 127.0.0.1:0, tls: {cert: c.example.crt, key: c.example.key}}
  - {address: 127.0.0.2:0, redirect_to_https: true}
routes:
  - match: /
    pipeline: [{text: hi}]
  - match: /
    host: r.example
    pipeline: [{text: r}]
`)
	s, _ := newServer(t, fileLoad(site.file))
	start(t, s)
	addrs := s.Addrs()
	port := addrs[0].String()[len("127.0.0.1:"):]
	for host, want := range map[string]string{
		"c.example":        "https://c.example:" + port + "/p?q",
		"C.Example.:8080":  "https://C.Example.:" + port + "/p?q",
		"x.wild.example":   "https://x.wild.example:" + port + "/p?q",
		"a.b.wild.example": "https://a.b.wild.example:" + port + "/p?q",
		"r.example":        "https://r.example:" + port + "/p?q",
		"192.0.2.7:80":     "https://192.0.2.7:" + port + "/p?q",
		"wild.example":     "",
		"evil.example":     "",
		"c.example.evil":   "",
		"xc.example":       "",
		"127.0.0.1":        "",
		"[::1]:80":         "",
	} {
		resp, _ := dial(t, addrs[1]).RoundTrip(t, "GET /p?q HTTP/1.1\r\nHost: "+host+"\r\n\r\n")
		got := fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Location"))
		if want == "" && got != "421 " || want != "" && got != "308 "+want {
			t.Errorf("Host %s: %s; want %s", host, got, map[bool]string{true: "421", false: "308 " + want}[want == ""])
		}
	}

	// With HTTPS served by something in front, and routes for any host,
	// there is no name to hold the redirect to.
	writeFile(t, site.file, "listen:\n  - {address: 127.0.0.2:0, redirect_to_https: 443}\nroutes:\n  - match: /\n    pipeline: [{text: hi}]\n")
	if err := s.Reload(); err != nil {
		t.Fatal(err)
	}
	resp, _ := dial(t, s.Addrs()[0]).RoundTrip(t, "GET /p HTTP/1.1\r\nHost: any.example\r\n\r\n")
	if resp.StatusCode != 308 || resp.Header.Get("Location") != "https://any.example/p" {
		t.Errorf("no names: %d %q; want 308 to https://any.example/p", resp.StatusCode, resp.Header.Get("Location"))
	}
}
