package cache

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/proxy"
	"github.com/sluice-server/sluice/sluicetest"
)

// reflector is an application that builds its page from request fields
// no key holds, as poisoned applications do, and says the page may be
// stored for a minute.
var reflector = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "max-age=60")
	var b strings.Builder
	for _, name := range []string{"X-Forwarded-Host", "X-Host", "X-Original-URL", "X-Rewrite-URL", "Forwarded", "Cookie", "X-HTTP-Method-Override",
		"X-Forwarded-Proto", "X-Forwarded-Scheme", "X-Forwarded-Port", "X-Forwarded-Prefix"} {
		if v := r.Header.Get(name); v != "" && !strings.Contains(v, "127.0.0.1") {
			b.WriteString(name + "=" + v + ";")
		}
	}
	b.WriteString("page")
	io.WriteString(w, b.String())
})

// No request field outside the key can change what is stored for
// everyone: an attacker's X-Forwarded-Host, X-Host, X-Original-URL, an
// unkeyed cookie... never reach the stored page, before a source that
// reads them directly and before a proxy that trusts the client's
// forwarding fields.
func TestPoisoning(t *testing.T) {
	app := appServer(t, reflector)
	trusting, err := proxy.New(proxy.Options{Upstreams: []string{app}, TrustedProxies: []string{"127.0.0.1/8"}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { trusting.Close() })
	sources := map[string]pipe.Component{"source": pipe.FromHTTP(reflector), "trusting proxy": trusting}
	attacks := [][]string{
		{"X-Forwarded-Host: evil.example"},
		{"X-Host: evil.example"},
		{"X-Original-URL: /evil"},
		{"X-Rewrite-URL: /evil"},
		{"Forwarded: host=evil.example"},
		{"X-HTTP-Method-Override: POST-evil"},
		{"Cookie: lang=evil"},
		{"X-Forwarded-Proto: evil"},
		{"X-Forwarded-Scheme: evil"},
		{"X-Forwarded-Port: evil"},
		{"X-Forwarded-Prefix: /evil"},
	}
	for name, src := range sources {
		for _, attack := range attacks {
			h := newHarnessWith(t, Options{}, nil, src)
			resp, body := h.get(t, "/p", attack...)
			if strings.Contains(body, "evil") && strings.Contains(resp.Header.Get("Cache-Status"), "stored") {
				t.Errorf("%s, %s: a page built from it was stored: %q", name, attack, body)
			}
			if _, body := h.get(t, "/p"); strings.Contains(body, "evil") {
				t.Errorf("%s, %s: another client got the poisoned page %q", name, attack, body)
			}
		}
	}
}

// With a cookie in the key, the page is stored per value of that cookie,
// and the application sees no other cookie.
func TestKeyedCookie(t *testing.T) {
	h := newHarnessWith(t, Options{Key: []string{"cookie:lang"}}, nil, pipe.FromHTTP(reflector))
	_, fr := h.get(t, "/k", "Cookie: lang=fr; track=evil")
	if fr != "Cookie=lang=fr;page" {
		t.Errorf("the application saw %q, want only the keyed cookie", fr)
	}
	resp, again := h.get(t, "/k", "Cookie: track=x; lang=fr")
	if again != fr || !strings.HasPrefix(resp.Header.Get("Cache-Status"), "Sluice; hit") {
		t.Errorf("same lang: %q %q", again, resp.Header.Get("Cache-Status"))
	}
	if _, en := h.get(t, "/k", "Cookie: lang=en"); en != "Cookie=lang=en;page" {
		t.Errorf("other lang: %q", en)
	}
	if _, none := h.get(t, "/k"); none != "page" {
		t.Errorf("no cookie: %q", none)
	}
}

// Web cache deception: /account/x.css is answered by the account route,
// which ignores the suffix and shows the logged-in user's page; the
// cache stores nothing of it, so the attacker asking the same URL later
// gets no one's account. A cache in the static route never sees the
// account path, spelt however.
func TestDeception(t *testing.T) {
	account := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/css")
		w.Header().Set("Last-Modified", "Mon, 01 Jan 2024 00:00:00 GMT") // heuristically fresh
		if c, err := r.Cookie("session"); err == nil {
			io.WriteString(w, "account of "+c.Value)
			return
		}
		io.WriteString(w, "please log in")
	})
	static := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=600")
		io.WriteString(w, "static "+r.URL.Path)
	})
	accountCache, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	staticCache, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	rt, err := pipe.NewRouter(
		pipe.Route{Match: []string{"/account/"}, Pipeline: pipe.Chain{accountCache, pipe.FromHTTP(account)}},
		pipe.Route{Match: []string{"/static/"}, Pipeline: pipe.Chain{staticCache, pipe.FromHTTP(static)}},
	)
	if err != nil {
		t.Fatal(err)
	}
	url := sluicetest.NewServer(t, pipe.Handler(rt)).URL
	h := &harness{url: url}
	if _, body := h.get(t, "/account/x.css", "Cookie: session=victim"); body != "account of victim" {
		t.Fatalf("victim's page %q", body)
	}
	if _, body := h.get(t, "/account/x.css"); body != "please log in" {
		t.Errorf("the attacker got %q", body)
	}
	if _, body := h.get(t, "/static/%2e%2e/account/y.css", "Cookie: session=victim"); body != "account of victim" {
		t.Fatalf("dot-segment path: %q", body)
	}
	if _, body := h.get(t, "/static/%2e%2e/account/y.css"); body != "please log in" {
		t.Errorf("the attacker got %q through a dot-segment path", body)
	}
	if staticCache.Len() != 0 {
		t.Errorf("the static route's cache holds %d entries, want none", staticCache.Len())
	}
	// A page that says it is public is stored, cookie or not.
	if _, body := h.get(t, "/static/a.css", "Cookie: session=victim"); body != "static /static/a.css" {
		t.Errorf("static page %q", body)
	}
	if staticCache.Len() != 1 {
		t.Errorf("a public static page was not stored")
	}
}

func appServer(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := sluicetest.NewServer(t, pipe.Handler(pipe.FromHTTP(h)))
	return srv.URL
}

// A path that holds a '?' (sent as %3F) and a path with a query are two
// URLs: neither answers for the other, nor does a '%' spelled %25.
func TestKeyPathEscaped(t *testing.T) {
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=60")
		io.WriteString(w, "path="+r.URL.Path+" query="+r.URL.RawQuery)
	})
	h := newHarnessWith(t, Options{}, nil, pipe.FromHTTP(echo))
	if _, body := h.get(t, "/a%3Fb"); body != "path=/a?b query=" {
		t.Fatalf("GET /a%%3Fb: %q", body)
	}
	if _, body := h.get(t, "/a?b"); body != "path=/a query=b" {
		t.Fatalf("GET /a?b after /a%%3Fb: %q, want the page of /a with query b", body)
	}
	if _, body := h.get(t, "/c%253Fd"); body != "path=/c%3Fd query=" {
		t.Fatalf("GET /c%%253Fd: %q", body)
	}
	if _, body := h.get(t, "/c%3Fd"); body != "path=/c?d query=" {
		t.Fatalf("GET /c%%3Fd after /c%%253Fd: %q", body)
	}
}
