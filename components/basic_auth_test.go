package components

import (
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/pipe"
)

// authFile writes an htpasswd file of lines and returns its path.
func authFile(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.htpasswd")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// authServe serves basic_auth with a hand-moved clock in front of a
// source.
func authServe(t *testing.T, opts BasicAuthOptions) (string, *atomic.Int64) {
	t.Helper()
	opts.Logger = guardQuiet
	a, err := newBasicAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	a.clock = now.Load
	a.lastCheck.Store(0)
	return guardServe(t, pipe.Chain{pipe.Pipe(a.handle), guardText("secret")}), &now
}

func authHeader(user, pw string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pw))
}

// authGet requests url with an Authorization header (none if empty) and
// returns status and WWW-Authenticate.
func authGet(t *testing.T, url, authorization string) (int, string, string) {
	t.Helper()
	var hdr []string
	if authorization != "" {
		hdr = []string{"Authorization", authorization}
	}
	resp, body := guardGet(t, url+"/", hdr...)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body
}

func TestBasicAuthHashesMadeInTest(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("bcrypt-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	sha512, _ := shaCrypt([]byte("sha512-pw"), "$6$rounds=1000$0123456789abcdef")
	sha256, _ := shaCrypt([]byte("sha256-pw"), "$5$NaCl")
	path := authFile(t,
		"# made in the test",
		"bcrypt:"+string(bc),
		"sha512:"+sha512,
		"sha256:"+sha256,
		"apr1:"+md5Crypt([]byte("apr1-pw"), "$apr1$", "s4lt"),
		"sha1:"+htpasswdSHA([]byte("sha1-pw")),
		"ünï:"+htpasswdSHA([]byte("pässwörd")),
	)
	url, _ := authServe(t, BasicAuthOptions{Realm: `Staff "only"`, Htpasswd: path})
	const challenge = `Basic realm="Staff \"only\"", charset="UTF-8"`
	tests := []struct {
		name, authorization string
		want                int
	}{
		{"bcrypt", authHeader("bcrypt", "bcrypt-pw"), 200},
		{"SHA-512 crypt", authHeader("sha512", "sha512-pw"), 200},
		{"SHA-256 crypt", authHeader("sha256", "sha256-pw"), 200},
		{"APR1", authHeader("apr1", "apr1-pw"), 200},
		{"{SHA}", authHeader("sha1", "sha1-pw"), 200},
		{"UTF-8 user and password", authHeader("ünï", "pässwörd"), 200},
		{"scheme is case-insensitive", "bAsIc " + base64.StdEncoding.EncodeToString([]byte("apr1:apr1-pw")), 200},
		{"password with a colon is kept whole", authHeader("bcrypt", "bcrypt-pw:"), 401},
		{"wrong password", authHeader("bcrypt", "bcrypt-PW"), 401},
		{"password of another user", authHeader("sha512", "bcrypt-pw"), 401},
		{"unknown user", authHeader("mallory", "bcrypt-pw"), 401},
		{"no credentials", "", 401},
		{"empty user", authHeader("", ""), 401},
		{"not base64", "Basic !!!!", 401},
		{"no colon", "Basic " + base64.StdEncoding.EncodeToString([]byte("bcrypt")), 401},
		{"other scheme", "Bearer abc", 401},
	}
	for _, tt := range tests {
		status, www, body := authGet(t, url, tt.authorization)
		if status != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, status, tt.want)
		}
		if status == 401 && (www != challenge || !strings.Contains(body, "authentication required")) {
			t.Errorf("%s: WWW-Authenticate %q body %q", tt.name, www, body)
		}
		if status == 200 && body != "secret" {
			t.Errorf("%s: body %q", tt.name, body)
		}
	}
	// Good credentials, remembered, still good; wrong ones still refused.
	for range 3 {
		if s, _, _ := authGet(t, url, authHeader("bcrypt", "bcrypt-pw")); s != 200 {
			t.Errorf("repeated good credentials: %d", s)
		}
		if s, _, _ := authGet(t, url, authHeader("bcrypt", "bcrypt-pw2")); s != 401 {
			t.Errorf("repeated wrong credentials: %d", s)
		}
	}
}

// A file written by Apache's htpasswd tool, with every hash it can make.
func TestBasicAuthHtpasswdTool(t *testing.T) {
	htpasswd, err := exec.LookPath("htpasswd")
	if err != nil {
		t.Skip("htpasswd (apache2-utils) not installed")
	}
	path := filepath.Join(t.TempDir(), "users")
	users := map[string][]string{
		"bea": {"-B", "-C", "5"}, "mia": {"-m"}, "sam": {"-s"},
	}
	created := false
	for name, flags := range users {
		args := append([]string{"-b"}, flags...)
		if !created {
			args = append(args, "-c")
			created = true
		}
		args = append(args, path, name, name+"'s password")
		if out, err := exec.Command(htpasswd, args...).CombinedOutput(); err != nil {
			t.Fatalf("htpasswd %v: %v\n%s", args, err, out)
		}
	}
	// SHA-crypt needs Apache 2.4.59 or later.
	if out, err := exec.Command(htpasswd, "-b", "-5", path, "sue", "sue's password").CombinedOutput(); err == nil {
		users["sue"] = nil
	} else {
		t.Logf("htpasswd -5 unavailable: %s", out)
	}
	url, _ := authServe(t, BasicAuthOptions{Htpasswd: path})
	for name := range users {
		if s, _, _ := authGet(t, url, authHeader(name, name+"'s password")); s != 200 {
			t.Errorf("%s: %d", name, s)
		}
		if s, _, _ := authGet(t, url, authHeader(name, name+"'s Password")); s != 401 {
			t.Errorf("%s with a wrong password: %d", name, s)
		}
	}
	if _, www, _ := authGet(t, url, ""); www != `Basic realm="Restricted", charset="UTF-8"` {
		t.Errorf("default realm: %q", www)
	}
}

// The file is read again when it changes, checked at most once a second;
// a broken file leaves the last good users in force.
func TestBasicAuthReload(t *testing.T) {
	path := authFile(t, "ann:"+htpasswdSHA([]byte("one")))
	url, now := authServe(t, BasicAuthOptions{Htpasswd: path})
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		future := time.Now().Add(time.Duration(now.Load()) + time.Hour)
		os.Chtimes(path, future, future)
	}
	check := func(user, pw string, want int, what string) {
		t.Helper()
		if s, _, _ := authGet(t, url, authHeader(user, pw)); s != want {
			t.Errorf("%s: %s/%s: %d, want %d", what, user, pw, s, want)
		}
	}
	check("ann", "one", 200, "initial")
	write("ann:"+htpasswdSHA([]byte("two")), "bob:"+htpasswdSHA([]byte("three")))
	check("ann", "one", 200, "within the second")
	now.Add(int64(time.Second))
	check("ann", "one", 401, "changed password")
	check("ann", "two", 200, "changed password")
	check("bob", "three", 200, "new user")

	write("ann:plaintext")
	now.Add(int64(time.Second))
	check("ann", "two", 200, "broken file keeps the last good users")

	write("bob:" + htpasswdSHA([]byte("three")))
	now.Add(int64(time.Second))
	check("ann", "two", 401, "user removed")
	check("bob", "three", 200, "user kept")

	os.Remove(path)
	now.Add(int64(time.Second))
	check("bob", "three", 200, "file removed: last users kept")
}

func TestBasicAuthOptions(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad")
	os.WriteFile(bad, []byte("x:y\n"), 0o600)
	for _, tt := range []struct {
		opts BasicAuthOptions
		err  string
	}{
		{BasicAuthOptions{}, "basic_auth: htpasswd file not set"},
		{BasicAuthOptions{Htpasswd: filepath.Join(dir, "missing")}, "no such file"},
		{BasicAuthOptions{Htpasswd: bad}, `basic_auth: ` + bad + `:1: user "x": unsupported hash format`},
		{BasicAuthOptions{Htpasswd: bad, Realm: "a\nb"}, "realm \"a\\nb\" contains a control character"},
	} {
		if _, err := NewBasicAuth(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewBasicAuth(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
}

// An unknown user is checked against a real hash, so that refusing them
// costs what refusing a wrong password does.
func TestBasicAuthUnknownUserCostsAHash(t *testing.T) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("x"), bcrypt.MinCost)
	a, err := newBasicAuth(BasicAuthOptions{Htpasswd: authFile(t, "zed:"+htpasswdSHA(nil), "amy:"+string(bc))})
	if err != nil {
		t.Fatal(err)
	}
	if u := a.users.Load(); u.dummy != string(bc) {
		t.Errorf("dummy hash %q, want amy's", u.dummy)
	}
}

func ExampleNewBasicAuth() {
	dir, err := os.MkdirTemp("", "basic-auth-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	hash, _ := bcrypt.GenerateFromPassword([]byte("opensesame"), 5) // htpasswd -B
	users := filepath.Join(dir, "users.htpasswd")
	os.WriteFile(users, []byte("ali:"+string(hash)+"\n"), 0o600)

	auth, err := NewBasicAuth(BasicAuthOptions{Realm: "private", Htpasswd: users})
	if err != nil {
		panic(err)
	}
	url, stop := guardExampleServe(pipe.Chain{auth, guardText("the treasure\n")})
	defer stop()

	resp, _ := guardExampleGet(url)
	fmt.Println(resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	resp, body := guardExampleGet(url, "Authorization", authHeader("ali", "opensesame"))
	fmt.Print(resp.StatusCode, " ", body)
	// Output:
	// 401 Basic realm="private", charset="UTF-8"
	// 200 the treasure
}

// Checking remembered credentials costs a SHA-256, not a bcrypt.
func BenchmarkBasicAuth(b *testing.B) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("pw"), 10)
	path := filepath.Join(b.TempDir(), "users")
	os.WriteFile(path, []byte("u:"+string(bc)+"\n"), 0o600)
	a, err := newBasicAuth(BasicAuthOptions{Htpasswd: path})
	if err != nil {
		b.Fatal(err)
	}
	hdr := []byte(authHeader("u", "pw"))
	b.ReportAllocs()
	for b.Loop() {
		user, pw, _ := parseBasicAuth(hdr)
		if !a.current().check(user, pw) {
			b.Fatal("refused")
		}
	}
}
