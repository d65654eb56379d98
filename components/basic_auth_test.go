package components

import (
	"cmp"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

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

// authServe serves basic_auth in front of a source.
func authServe(t *testing.T, opts BasicAuthOptions) string {
	t.Helper()
	opts.Logger = cmp.Or(opts.Logger, guardQuiet)
	a, err := NewBasicAuth(opts)
	if err != nil {
		t.Fatal(err)
	}
	return sluicetest.NewServer(t, pipe.Handler(pipe.Chain{a, guardText("secret")})).URL
}

// authSHA is the {SHA} hash of pw (htpasswd -s).
func authSHA(pw string) string {
	sum := sha1.Sum([]byte(pw))
	return "{SHA}" + base64.StdEncoding.EncodeToString(sum[:])
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
	resp, body := sluicetest.Get(t, url+"/", hdr...)
	return resp.StatusCode, resp.Header.Get("WWW-Authenticate"), body
}

// Credentials are read from the Authorization field as RFC 7617 says and
// checked against the file (package htpasswd tests every hash format);
// the refused get the challenge.
func TestBasicAuthHashesMadeInTest(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("bcrypt-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	path := authFile(t,
		"# made in the test",
		"bcrypt:"+string(bc),
		// Drepper's SHA-512 crypt vector and Apache's $apr1$ example.
		"sha512:$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1",
		"apr1:$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/",
		"sha1:"+authSHA("sha1-pw"),
		"ünï:"+authSHA("pässwörd"),
	)
	url := authServe(t, BasicAuthOptions{Realm: `Staff "only"`, Htpasswd: path})
	const challenge = `Basic realm="Staff \"only\"", charset="UTF-8"`
	tests := []struct {
		name, authorization string
		want                int
	}{
		{"bcrypt", authHeader("bcrypt", "bcrypt-pw"), 200},
		{"SHA-512 crypt", authHeader("sha512", "Hello world!"), 200},
		{"APR1", authHeader("apr1", "myPassword"), 200},
		{"{SHA}", authHeader("sha1", "sha1-pw"), 200},
		{"UTF-8 user and password", authHeader("ünï", "pässwörd"), 200},
		{"scheme is case-insensitive", "bAsIc " + base64.StdEncoding.EncodeToString([]byte("apr1:myPassword")), 200},
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
	url := authServe(t, BasicAuthOptions{Htpasswd: path})
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

// The file is read again when it changes and fails closed (a line Sluice
// could not parse, or a deleted file, left the old users in force, so a
// revoked user still got in): a locked user is refused, a deleted file
// refuses everyone with 403 and no challenge, one that cannot be read
// with 500, and a file back in place is used again. The file is changed
// on disk while the server runs; package htpasswd tests the reloading
// itself with a clock moved by hand, this test waits for each change to
// be noticed (within a second).
func TestBasicAuthReload(t *testing.T) {
	path := authFile(t, "ann:"+authSHA("one"))
	log, logged := sluicetest.Logger()
	url := authServe(t, BasicAuthOptions{Htpasswd: path, Logger: log})
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	await := func(user, pw string, want int, what string) {
		t.Helper()
		sluicetest.WaitFor(t, what, func() bool {
			s, www, _ := authGet(t, url, authHeader(user, pw))
			return s == want && (want == 401) == (www != "")
		})
	}
	await("ann", "one", 200, "ann admitted")
	write("ann:"+authSHA("one"), "bob:"+authSHA("three"))
	await("bob", "three", 200, "bob added")
	write("ann:"+authSHA("one"), "bob:!")
	await("bob", "three", 401, "bob locked")
	write("ann:" + authSHA("two"))
	await("ann", "one", 401, "ann's old password refused")
	await("ann", "two", 200, "ann's new password admitted")

	// Deleted: every request refused, without a challenge.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	await("ann", "two", 403, "403 for a deleted file")
	// A directory in its place cannot be read: 500.
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	await("ann", "two", 500, "500 for an unreadable file")
	os.Remove(path)
	write("bob:" + authSHA("three"))
	await("bob", "three", 200, "the file back")
	l := logged.String()
	if strings.Count(l, "refusing every request") != 2 || strings.Count(l, "readable again") != 1 || strings.Count(l, `user \"bob\"`) != 1 {
		t.Errorf("want the locked line, the deletion and the directory logged once each, and the recovery once:\n%s", l)
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
