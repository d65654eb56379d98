package components

import (
	"cmp"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
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
	opts.Logger = cmp.Or(opts.Logger, guardQuiet)
	a, err := newBasicAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	a.clock = now.Load
	a.lastCheck.Store(0)
	return sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(a.handle), guardText("secret")})).URL, &now
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
	htpasswd := sluicetest.NeedTool(t, "htpasswd", "apache2-utils")
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

// The file is read again when it changes, checked at most once a second,
// and it fails closed (a line Sluice could not parse, or a deleted file,
// left the old users in force, so a revoked user still got in). The file
// is changed on disk while the server runs; the clock is moved by hand.
func TestBasicAuthReload(t *testing.T) {
	path := authFile(t, "ann:"+htpasswdSHA([]byte("one")))
	log, logged := guardLogger()
	url, now := authServe(t, BasicAuthOptions{Htpasswd: path, Logger: log})
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
	tick := func() { now.Add(int64(time.Second)) }
	check("ann", "one", 200, "initial")
	write("ann:"+htpasswdSHA([]byte("two")), "bob:"+htpasswdSHA([]byte("three")))
	check("ann", "one", 200, "within the second")
	tick()
	check("ann", "one", 401, "changed password")
	check("ann", "two", 200, "changed password")
	check("bob", "three", 200, "new user")

	for _, locked := range []string{"bob:!", "bob:three", "bob:" + htpasswdSHA([]byte("three"))[:10], "bob"} {
		write("ann:"+htpasswdSHA([]byte("two")), locked)
		tick()
		check("bob", "three", 401, "locked by "+locked)
		check("ann", "two", 200, "other users kept beside "+locked)
	}
	write("ann:"+htpasswdSHA([]byte("two")), "bob:"+htpasswdSHA([]byte("three")), "bob:"+htpasswdSHA([]byte("four")))
	tick()
	check("bob", "three", 401, "listed twice")
	check("bob", "four", 401, "listed twice")

	write("bob:" + htpasswdSHA([]byte("three")))
	tick()
	check("ann", "two", 401, "user removed")
	check("bob", "three", 200, "user back")

	// Deleted: every request refused, without a challenge.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tick()
	for range 2 {
		if s, www, _ := authGet(t, url, authHeader("bob", "three")); s != 403 || www != "" {
			t.Errorf("file deleted: %d %q, want 403 without a challenge", s, www)
		}
		tick()
	}
	// A directory in its place cannot be read: 500.
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	tick()
	check("bob", "three", 500, "file unreadable")
	os.Remove(path)
	write("bob:" + htpasswdSHA([]byte("three")))
	tick()
	check("bob", "three", 200, "file back")
	l := logged.String()
	if strings.Count(l, "refusing every request") != 2 || strings.Count(l, "readable again") != 1 {
		t.Errorf("want the deletion and the directory logged once each, and the recovery once:\n%s", l)
	}
}

// Lines that lock users are logged once per version of the file, with the
// user's name escaped and without the hash.
func TestBasicAuthLogsLockedLines(t *testing.T) {
	path := authFile(t, "ann:"+htpasswdSHA([]byte("one")), "mal\x1b[31m:s3cr3t-plain", "bob:!", "no colon here")
	log, logged := guardLogger()
	url, now := authServe(t, BasicAuthOptions{Htpasswd: path, Logger: log})
	for range 3 {
		if s, _, _ := authGet(t, url, authHeader("mal\x1b[31m", "s3cr3t-plain")); s != 401 {
			t.Errorf("plain-text line: %d", s)
		}
		now.Add(int64(time.Second))
	}
	l := logged.String()
	for _, want := range []string{`users.htpasswd:2: user \"mal\\x1b[31m\": unsupported hash format`, `users.htpasswd:3: user \"bob\"`, `users.htpasswd:4: want user:hash`} {
		if strings.Count(l, want) != 1 {
			t.Errorf("log has %q %d times, want once:\n%s", want, strings.Count(l, want), l)
		}
	}
	if strings.Contains(l, "s3cr3t") || strings.Contains(l, "\x1b") || strings.Contains(l, "here") {
		t.Errorf("log has a hash, a raw control character or a line's text:\n%q", l)
	}
}

func TestBasicAuthOptions(t *testing.T) {
	dir := t.TempDir()
	locked := filepath.Join(dir, "locked")
	os.WriteFile(locked, []byte("x:y\n"), 0o600)
	for _, tt := range []struct {
		opts BasicAuthOptions
		err  string
	}{
		{BasicAuthOptions{}, "basic_auth: htpasswd file not set"},
		{BasicAuthOptions{Htpasswd: filepath.Join(dir, "missing")}, "no such file"},
		{BasicAuthOptions{Htpasswd: dir}, "is a directory"},
		{BasicAuthOptions{Htpasswd: locked, Realm: "a\nb"}, "realm \"a\\nb\" contains a control character"},
	} {
		if _, err := NewBasicAuth(tt.opts); err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("NewBasicAuth(%+v) = %v, want %q", tt.opts, err, tt.err)
		}
	}
}

// The work of a check does not depend on the user (with bcrypt and SHA-1
// users in one file, an unknown user was checked against the first
// user's hash, so timing told users and schemes apart). Every check verifies the password against one hash of each
// class in the file; counted through the verify hook, never timed.
func TestBasicAuthCostIndependentOfUser(t *testing.T) {
	bc4, _ := bcrypt.GenerateFromPassword([]byte("b4"), 4)
	bc5, _ := bcrypt.GenerateFromPassword([]byte("b5"), 5)
	sha512, _ := shaCrypt([]byte("s6"), "$6$rounds=1000$salt")
	sha256, _ := shaCrypt([]byte("s5"), "$5$salt")
	path := authFile(t,
		"b4:"+string(bc4), "b5:"+string(bc5), "s6:"+sha512, "s5:"+sha256,
		"apr:"+md5Crypt([]byte("apr"), "$apr1$", "salt"), "md5:"+md5Crypt([]byte("md5"), "$1$", "salt"),
		"sha:"+htpasswdSHA([]byte("sha")), "locked:!")
	classes := []string{"bcrypt/4", "bcrypt/5", "sha-crypt/$6$/1000", "sha-crypt/$5$/5000", "md5-crypt", "sha1"}
	opts := BasicAuthOptions{Htpasswd: path, Logger: guardQuiet}
	a, err := newBasicAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	a.verify = func(hash string, pw []byte) bool {
		mu.Lock()
		counts[htpasswdClass(hash)]++
		mu.Unlock()
		return htpasswdVerify(hash, pw)
	}
	url := sluicetest.NewServer(t, pipe.Handler(pipe.Chain{pipe.Pipe(a.handle), guardText("secret")})).URL
	for _, tt := range []struct {
		user, pw string
		want     int
	}{
		{"b4", "b4", 200}, {"b5", "b5", 200}, {"s6", "s6", 200}, {"s5", "s5", 200},
		{"apr", "apr", 200}, {"md5", "md5", 200}, {"sha", "sha", 200},
		{"b4", "wrong", 401}, {"sha", "wrong", 401}, {"md5", "b4", 401},
		{"nobody", "b4", 401}, {"nobody", "sha", 401}, {"locked", "!", 401}, {"", "", 401},
	} {
		mu.Lock()
		clear(counts)
		mu.Unlock()
		if s, _, _ := authGet(t, url, authHeader(tt.user, tt.pw)); s != tt.want {
			t.Errorf("%s/%s: %d, want %d", tt.user, tt.pw, s, tt.want)
		}
		mu.Lock()
		once := len(counts) == len(classes)
		for _, c := range classes {
			once = once && counts[c] == 1
		}
		if !once {
			t.Errorf("%s/%s: verified %v, want one of each of %v", tt.user, tt.pw, counts, classes)
		}
		mu.Unlock()
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
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{auth, guardText("the treasure\n")}))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	url := srv.URL

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
		if !a.check(a.current(), user, pw) {
			b.Fatal("refused")
		}
	}
}
