package htpasswd

import (
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/sluicetest"
)

// writeFile writes an htpasswd file of lines and returns its path.
func writeFile(t testing.TB, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "users.htpasswd")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// openFile opens path with a hand-moved clock.
func openFile(t *testing.T, path string, log *slog.Logger) (*File, *atomic.Int64) {
	t.Helper()
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	f, err := Open(path, Options{Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	var now atomic.Int64
	f.clock = now.Load
	f.lastCheck.Store(0)
	return f, &now
}

// verdict is what a check of user and pw against f comes to: "ok",
// "refused", or the file's state when it cannot be read, "gone" or
// "unreadable".
func verdict(f *File, user, pw string) string {
	u, err := f.Users()
	switch {
	case errors.Is(err, fs.ErrNotExist) && u == nil:
		return "gone"
	case err != nil && u == nil:
		return "unreadable"
	case err != nil || u == nil:
		return "both users and an error"
	case u.Check([]byte(user), []byte(pw)):
		return "ok"
	}
	return "refused"
}

// Every hash format verifies its password and no other; an unknown user
// or an empty one never matches; credentials that matched, remembered,
// still match, and wrong ones are still refused.
func TestCheckHashesMadeInTest(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("bcrypt-pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	sha512, _ := shaCrypt([]byte("sha512-pw"), "$6$rounds=1000$0123456789abcdef")
	sha256, _ := shaCrypt([]byte("sha256-pw"), "$5$NaCl")
	f, _ := openFile(t, writeFile(t,
		"# made in the test",
		"bcrypt:"+string(bc),
		"sha512:"+sha512,
		"sha256:"+sha256,
		"apr1:"+md5Crypt([]byte("apr1-pw"), "$apr1$", "s4lt"),
		"sha1:"+shaHash([]byte("sha1-pw")),
		"ünï:"+shaHash([]byte("pässwörd")),
	), nil)
	for _, tt := range []struct{ name, user, pw, want string }{
		{"bcrypt", "bcrypt", "bcrypt-pw", "ok"},
		{"SHA-512 crypt", "sha512", "sha512-pw", "ok"},
		{"SHA-256 crypt", "sha256", "sha256-pw", "ok"},
		{"APR1", "apr1", "apr1-pw", "ok"},
		{"{SHA}", "sha1", "sha1-pw", "ok"},
		{"UTF-8 user and password", "ünï", "pässwörd", "ok"},
		{"password with a colon", "bcrypt", "bcrypt-pw:", "refused"},
		{"wrong password", "bcrypt", "bcrypt-PW", "refused"},
		{"password of another user", "sha512", "bcrypt-pw", "refused"},
		{"unknown user", "mallory", "bcrypt-pw", "refused"},
		{"empty user", "", "", "refused"},
	} {
		if got := verdict(f, tt.user, tt.pw); got != tt.want {
			t.Errorf("%s: %s, want %s", tt.name, got, tt.want)
		}
	}
	for range 3 {
		if got := verdict(f, "bcrypt", "bcrypt-pw"); got != "ok" {
			t.Errorf("repeated good credentials: %s", got)
		}
		if got := verdict(f, "bcrypt", "bcrypt-pw2"); got != "refused" {
			t.Errorf("repeated wrong credentials: %s", got)
		}
	}
}

// The file is read again when it changes, checked at most once a second,
// and it fails closed (a line Sluice could not parse, or a deleted file,
// left the old users in force, so a revoked user still got in). The file
// is changed on disk; the clock is moved by hand.
func TestReload(t *testing.T) {
	path := writeFile(t, "ann:"+shaHash([]byte("one")))
	log, logged := sluicetest.Logger()
	f, now := openFile(t, path, log)
	write := func(lines ...string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		future := time.Now().Add(time.Duration(now.Load()) + time.Hour)
		os.Chtimes(path, future, future)
	}
	check := func(user, pw, want, what string) {
		t.Helper()
		if got := verdict(f, user, pw); got != want {
			t.Errorf("%s: %s/%s: %s, want %s", what, user, pw, got, want)
		}
	}
	tick := func() { now.Add(int64(time.Second)) }
	check("ann", "one", "ok", "initial")
	write("ann:"+shaHash([]byte("two")), "bob:"+shaHash([]byte("three")))
	check("ann", "one", "ok", "within the second")
	tick()
	check("ann", "one", "refused", "changed password")
	check("ann", "two", "ok", "changed password")
	check("bob", "three", "ok", "new user")

	for _, locked := range []string{"bob:!", "bob:three", "bob:" + shaHash([]byte("three"))[:10], "bob"} {
		write("ann:"+shaHash([]byte("two")), locked)
		tick()
		check("bob", "three", "refused", "locked by "+locked)
		check("ann", "two", "ok", "other users kept beside "+locked)
	}
	write("ann:"+shaHash([]byte("two")), "bob:"+shaHash([]byte("three")), "bob:"+shaHash([]byte("four")))
	tick()
	check("bob", "three", "refused", "listed twice")
	check("bob", "four", "refused", "listed twice")

	write("bob:" + shaHash([]byte("three")))
	tick()
	check("ann", "two", "refused", "user removed")
	check("bob", "three", "ok", "user back")

	// Deleted: no users at all.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	tick()
	for range 2 {
		check("bob", "three", "gone", "file deleted")
		tick()
	}
	// A directory in its place cannot be read.
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	tick()
	check("bob", "three", "unreadable", "file unreadable")
	os.Remove(path)
	write("bob:" + shaHash([]byte("three")))
	tick()
	check("bob", "three", "ok", "file back")
	l := logged.String()
	if strings.Count(l, "refusing every request") != 2 || strings.Count(l, "readable again") != 1 {
		t.Errorf("want the deletion and the directory logged once each, and the recovery once:\n%s", l)
	}
}

// Lines that lock users are logged once per version of the file, with the
// user's name escaped and without the hash.
func TestLogsLockedLines(t *testing.T) {
	path := writeFile(t, "ann:"+shaHash([]byte("one")), "mal\x1b[31m:s3cr3t-plain", "bob:!", "no colon here")
	log, logged := sluicetest.Logger()
	f, now := openFile(t, path, log)
	for range 3 {
		if got := verdict(f, "mal\x1b[31m", "s3cr3t-plain"); got != "refused" {
			t.Errorf("plain-text line: %s", got)
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

// The work of a check does not depend on the user (with bcrypt and SHA-1
// users in one file, an unknown user was checked against the first
// user's hash, so timing told users and schemes apart). Every check
// verifies the password against one hash of each class in the file;
// counted through the verify hook, never timed.
func TestCostIndependentOfUser(t *testing.T) {
	bc4, _ := bcrypt.GenerateFromPassword([]byte("b4"), 4)
	bc5, _ := bcrypt.GenerateFromPassword([]byte("b5"), 5)
	sha512, _ := shaCrypt([]byte("s6"), "$6$rounds=1000$salt")
	sha256, _ := shaCrypt([]byte("s5"), "$5$salt")
	path := writeFile(t,
		"b4:"+string(bc4), "b5:"+string(bc5), "s6:"+sha512, "s5:"+sha256,
		"apr:"+md5Crypt([]byte("apr"), "$apr1$", "salt"), "md5:"+md5Crypt([]byte("md5"), "$1$", "salt"),
		"sha:"+shaHash([]byte("sha")), "locked:!")
	classes := []string{"bcrypt/4", "bcrypt/5", "sha-crypt/$6$/1000", "sha-crypt/$5$/5000", "md5-crypt", "sha1"}
	f, _ := openFile(t, path, nil)
	var mu sync.Mutex
	counts := map[string]int{}
	f.verify = func(hash string, pw []byte) bool {
		mu.Lock()
		counts[hashClass(hash)]++
		mu.Unlock()
		return verifyHash(hash, pw)
	}
	for _, tt := range []struct{ user, pw, want string }{
		{"b4", "b4", "ok"}, {"b5", "b5", "ok"}, {"s6", "s6", "ok"}, {"s5", "s5", "ok"},
		{"apr", "apr", "ok"}, {"md5", "md5", "ok"}, {"sha", "sha", "ok"},
		{"b4", "wrong", "refused"}, {"sha", "wrong", "refused"}, {"md5", "b4", "refused"},
		{"nobody", "b4", "refused"}, {"nobody", "sha", "refused"}, {"locked", "!", "refused"}, {"", "", "refused"},
	} {
		clear(counts)
		if got := verdict(f, tt.user, tt.pw); got != tt.want {
			t.Errorf("%s/%s: %s, want %s", tt.user, tt.pw, got, tt.want)
		}
		once := len(counts) == len(classes)
		for _, c := range classes {
			once = once && counts[c] == 1
		}
		if !once {
			t.Errorf("%s/%s: verified %v, want one of each of %v", tt.user, tt.pw, counts, classes)
		}
	}
}

// A password longer than MaxPassword is refused without being hashed,
// for a user whose password it is as for anyone (SHA-crypt costs more the
// longer the password: 3,000 bytes made a check 16 times dearer); one of
// MaxPassword bytes is verified as any other. Counted through the verify
// hook, never timed.
func TestLongPasswordRefusedUnhashed(t *testing.T) {
	atCap := strings.Repeat("p", MaxPassword)
	over := atCap + "p"
	long, _ := shaCrypt([]byte(over), "$6$salt")
	capped, _ := shaCrypt([]byte(atCap), "$5$salt")
	bc, _ := bcrypt.GenerateFromPassword([]byte("b"), 4)
	f, _ := openFile(t, writeFile(t, "long:"+long, "capped:"+capped, "b:"+string(bc)), nil)
	var hashed atomic.Int64
	f.verify = func(hash string, pw []byte) bool {
		hashed.Add(1)
		return verifyHash(hash, pw)
	}
	for _, tt := range []struct {
		user, pw, want string
		hashes         int64
	}{
		{"long", over, "refused", 0},
		{"capped", over, "refused", 0},
		{"nobody", over, "refused", 0},
		{"b", over + strings.Repeat("x", 2000), "refused", 0},
		{"capped", atCap, "ok", 3},
		{"long", atCap, "refused", 3},
		{"nobody", atCap, "refused", 3},
	} {
		hashed.Store(0)
		if got := verdict(f, tt.user, tt.pw); got != tt.want {
			t.Errorf("%s with %d bytes: %s, want %s", tt.user, len(tt.pw), got, tt.want)
		}
		if n := hashed.Load(); n != tt.hashes {
			t.Errorf("%s with %d bytes: %d hashes, want %d", tt.user, len(tt.pw), n, tt.hashes)
		}
	}
}

// Open reports a file it cannot read, as the system says it.
func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	for path, want := range map[string]string{filepath.Join(dir, "missing"): "no such file", dir: "is a directory"} {
		if _, err := Open(path, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Open(%s) = %v, want %q", path, err, want)
		}
	}
}

// Checking remembered credentials costs a SHA-256, not a bcrypt.
func BenchmarkCheck(b *testing.B) {
	bc, _ := bcrypt.GenerateFromPassword([]byte("pw"), 10)
	f, err := Open(writeFile(b, "u:"+string(bc)), Options{})
	if err != nil {
		b.Fatal(err)
	}
	user, pw := []byte("u"), []byte("pw")
	b.ReportAllocs()
	for b.Loop() {
		u, _ := f.Users()
		if !u.Check(user, pw) {
			b.Fatal("refused")
		}
	}
}
