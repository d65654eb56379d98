package htpasswd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"

	"github.com/sluice-server/sluice/sluicetest"
)

// The test vectors of Drepper's "Unix crypt using SHA-256 and SHA-512".
var shaCryptVectors = []struct{ setting, key, want string }{
	{"$5$saltstring", "Hello world!",
		"$5$saltstring$5B8vYYiY.CVt1RlTTf8KbXBH3hsxY/GNooZaBBGWEc5"},
	{"$5$rounds=10000$saltstringsaltstring", "Hello world!",
		"$5$rounds=10000$saltstringsaltst$3xv.VbSHBb41AL9AvLeujZkZRBAwqFMz2.opqey6IcA"},
	{"$5$rounds=5000$toolongsaltstring", "This is just a test",
		"$5$rounds=5000$toolongsaltstrin$Un/5jzAHMgOGZ5.mWJpuVolil07guHPvOW8mGRcvxa5"},
	{"$5$rounds=1400$anotherlongsaltstring",
		"a very much longer text to encrypt.  This one even stretches over morethan one line.",
		"$5$rounds=1400$anotherlongsalts$Rx.j8H.h8HjEDGomFU8bDkXm3XIUnzyxf12oP84Bnq1"},
	{"$5$rounds=77777$short", "we have a short salt string but not a short password",
		"$5$rounds=77777$short$JiO1O3ZpDAxGJeaDIuqCoEFysAe1mZNJRs3pw0KQRd/"},
	{"$5$rounds=123456$asaltof16chars..", "a short string",
		"$5$rounds=123456$asaltof16chars..$gP3VQ/6X7UUEW3HkBn2w1/Ptq2jxPyzV/cZKmF/wJvD"},
	{"$5$rounds=10$roundstoolow", "the minimum number is still observed",
		"$5$rounds=1000$roundstoolow$yfvwcWrQ8l/K0DAWyuPMDNHpIVlTQebY9l/gL972bIC"},
	{"$6$saltstring", "Hello world!",
		"$6$saltstring$svn8UoSVapNtMuq1ukKS4tPQd8iKwSMHWjl/O817G3uBnIFNjnQJuesI68u4OTLiBFdcbYEdFCoEOfaS35inz1"},
	{"$6$rounds=10000$saltstringsaltstring", "Hello world!",
		"$6$rounds=10000$saltstringsaltst$OW1/O6BYHV6BcXZu8QVeXbDWra3Oeqh0sbHbbMCVNSnCM/UrjmM0Dp8vOuZeHBy/YTBmSK6H9qs/y3RnOaw5v."},
	{"$6$rounds=5000$toolongsaltstring", "This is just a test",
		"$6$rounds=5000$toolongsaltstrin$lQ8jolhgVRVhY4b5pZKaysCLi0QBxGoNeKQzQ3glMhwllF7oGDZxUhx1yxdYcz/e1JSbq3y6JMxxl8audkUEm0"},
	{"$6$rounds=1400$anotherlongsaltstring",
		"a very much longer text to encrypt.  This one even stretches over morethan one line.",
		"$6$rounds=1400$anotherlongsalts$POfYwTEok97VWcjxIiSOjiykti.o/pQs.wPvMxQ6Fm7I6IoYN3CmLs66x9t0oSwbtEW7o7UmJEiDwGqd8p4ur1"},
	{"$6$rounds=77777$short", "we have a short salt string but not a short password",
		"$6$rounds=77777$short$WuQyW2YR.hBNpjjRhpYD/ifIw05xdfeEyQoMxIXbkvr0gge1a1x3yRULJ5CCaUeOxFmtlcGZelFl5CxtgfiAc0"},
	{"$6$rounds=123456$asaltof16chars..", "a short string",
		"$6$rounds=123456$asaltof16chars..$BtCwjqMJGx5hrJhZywWvt0RLE8uZ4oPwcelCjmw2kSYu.Ec6ycULevoBK25fs2xXgMNrCzIMVcgEJAstJeonj1"},
	{"$6$rounds=10$roundstoolow", "the minimum number is still observed",
		"$6$rounds=1000$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX."},
}

func TestSHACryptVectors(t *testing.T) {
	for _, v := range shaCryptVectors {
		if testing.Short() && (strings.Contains(v.setting, "=77777") || strings.Contains(v.setting, "=123456")) {
			continue // seconds under -race
		}
		got, err := shaCrypt([]byte(v.key), v.setting)
		if err != nil || got != v.want {
			t.Errorf("shaCrypt(%q, %q) = %q, %v; want %q", v.key, v.setting, got, err, v.want)
		}
		if !verifyHash(v.want, []byte(v.key)) {
			t.Errorf("verify %q with its key failed", v.want)
		}
		if verifyHash(v.want, []byte(v.key+"x")) {
			t.Errorf("verify %q with a wrong key succeeded", v.want)
		}
	}
	// A stored hash keeps the rounds as written; verification clamps them.
	if !verifyHash("$6$rounds=10$roundstoolow$kUMsbe306n21p9R.FRkW3IGn.S9NPN0x50YhH1xhLsPuWGsUSklZt58jaTfF4ZEQpyUNGc0dqbpBYYBaHHrsX.",
		[]byte("the minimum number is still observed")) {
		t.Error("rounds=10 as stored did not verify")
	}
}

// MD5 crypt vectors: the $apr1$ example of Apache's password-encryption
// documentation, and hashes made by OpenSSL 3 (`openssl passwd -1/-apr1
// -salt S KEY`), including an empty salt and key.
var md5CryptVectors = []struct{ hash, key string }{
	{"$apr1$r31.....$HqJZimcKQFAMYayBlzkrA/", "myPassword"},
	{"$apr1$cZoD7rpt$QvDG6ps/UVr5008zzo1pa.", "secret"},
	{"$apr1$x$16j9.5e7KiXmuYFAYpPJM/", "a"},
	{"$1$saltstri$qQY4WxjABChYG1ccLpfkz/", "password"},
	{"$1$$qRPK7m23GJusamGpoGLby/", ""},
}

func TestMD5CryptVectors(t *testing.T) {
	for _, v := range md5CryptVectors {
		magic, salt, _, err := parseMD5Crypt(v.hash)
		if err != nil {
			t.Fatalf("parse %q: %v", v.hash, err)
		}
		if got := md5Crypt([]byte(v.key), magic, salt); got != v.hash {
			t.Errorf("md5Crypt(%q, %q, %q) = %q, want %q", v.key, magic, salt, got, v.hash)
		}
		if !verifyHash(v.hash, []byte(v.key)) || verifyHash(v.hash, []byte(v.key+"!")) {
			t.Errorf("verify %q wrong", v.hash)
		}
	}
}

// Hashes made by openssl passwd (-5, -6, -apr1, -1) and by Apache's
// htpasswd (-B, -m, -s, and -2/-5 where it has them) verify, with random
// salts the tools choose.
func TestExternalTools(t *testing.T) {
	const pw = "correct horse battery staple"
	verifies := func(t *testing.T, tool, hash string) {
		t.Helper()
		if err := checkHash(hash); err != nil {
			t.Errorf("%s: %q: %v", tool, hash, err)
			return
		}
		if !verifyHash(hash, []byte(pw)) {
			t.Errorf("%s: %q does not verify", tool, hash)
		}
		if verifyHash(hash, []byte(pw[1:])) {
			t.Errorf("%s: %q verifies a wrong password", tool, hash)
		}
	}
	t.Run("openssl", func(t *testing.T) {
		openssl := sluicetest.NeedTool(t, "openssl", "openssl")
		for _, flag := range []string{"-5", "-6", "-apr1", "-1"} {
			out, err := exec.Command(openssl, "passwd", flag, pw).Output()
			if err != nil {
				t.Errorf("openssl passwd %s: %v", flag, err)
				continue
			}
			verifies(t, "openssl passwd "+flag, strings.TrimSpace(string(out)))
		}
		out, err := exec.Command(openssl, "passwd", "-6", "-salt", "rounds=2000$abc", pw).Output()
		if err == nil && strings.HasPrefix(string(out), "$6$") {
			verifies(t, "openssl passwd -6 rounds", strings.TrimSpace(string(out)))
		}
		// Our SHA-crypt and MD5 crypt agree with openssl for a given salt.
		for _, c := range []struct{ flag, salt, mine string }{
			{"-5", "Qx9.zz/12", mustSHACrypt(t, pw, "$5$Qx9.zz/12")},
			{"-6", "Qx9.zz/12", mustSHACrypt(t, pw, "$6$Qx9.zz/12")},
			{"-apr1", "Qx9.zz/1", md5Crypt([]byte(pw), "$apr1$", "Qx9.zz/1")},
			{"-1", "Qx9.zz/1", md5Crypt([]byte(pw), "$1$", "Qx9.zz/1")},
		} {
			out, err := exec.Command(openssl, "passwd", c.flag, "-salt", c.salt, pw).Output()
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.TrimSpace(string(out)); got != c.mine {
				t.Errorf("openssl passwd %s -salt %s = %q, ours %q", c.flag, c.salt, got, c.mine)
			}
		}
	})
	t.Run("htpasswd", func(t *testing.T) {
		htpasswd := sluicetest.NeedTool(t, "htpasswd", "apache2-utils")
		for _, flag := range []string{"-B", "-m", "-s", "-2", "-5"} {
			out, err := exec.Command(htpasswd, "-nb", flag, "u", pw).Output()
			if err != nil {
				if flag == "-2" || flag == "-5" {
					continue // Apache before 2.4.59 has no SHA-crypt
				}
				t.Errorf("htpasswd %s: %v", flag, err)
				continue
			}
			_, hash, _ := strings.Cut(strings.TrimSpace(string(out)), ":")
			verifies(t, "htpasswd "+flag, hash)
		}
	})
}

func mustSHACrypt(t *testing.T, pw, setting string) string {
	t.Helper()
	s, err := shaCrypt([]byte(pw), setting)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParse(t *testing.T) {
	bc, err := bcrypt.GenerateFromPassword([]byte("pw"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	good := "# users\n\nalice:" + string(bc) + "\r\nbob:" + shaHash([]byte("pw")) +
		"\ncarol:" + md5Crypt([]byte("pw"), "$apr1$", "abcdefgh") + "\n"
	users, problems := parse([]byte(good), "users")
	if len(problems) > 0 || len(users) != 3 {
		t.Fatalf("users = %v, problems %q", users, problems)
	}
	for name, u := range users {
		if !verifyHash(u.hash, []byte("pw")) || verifyHash(u.hash, []byte("pW")) {
			t.Errorf("%s: %q", name, u.hash)
		}
	}
	want := map[string]string{"alice": "bcrypt/4", "bob": "sha1", "carol": "md5-crypt"}
	for name, class := range want {
		if users[name].class != class {
			t.Errorf("%s: class %q, want %q", name, users[name].class, class)
		}
	}
	// A line that is not a hash Sluice verifies locks its user (an empty
	// hash) and is described without the hash; the other users stay.
	for _, tt := range []struct{ file, problem string }{
		{"alice\n", "users:1: want user:hash"},
		{"\nalice:plaintext\n", "users:2: user \"alice\": unsupported hash format (plain text? use htpasswd -B): locked"},
		{"alice:!\n", "users:1: user \"alice\": unsupported hash format"},
		{"alice:abJnggxhB/yWI\n", "DES crypt hashes are not supported"},
		{"alice:{SHA}xyz\n", "bad {SHA} hash"},
		{"alice:$2y$05$short\n", "bad bcrypt hash"},
		{"alice:$6$salt$tooshort\n", "bad SHA-crypt hash"},
		{"alice:$apr1$salt$tooshort\n", "bad MD5 crypt hash"},
		{"alice:" + shaHash(nil) + "\nalice:" + shaHash(nil) + "\n", "users:2: user \"alice\" listed twice: locked"},
		{"al\x00ice:x\n", `user "al\x00ice"`},
	} {
		users, problems := parse([]byte(tt.file+"bob:"+shaHash([]byte("pw"))+"\n"), "users")
		got := strings.Join(problems, "\n")
		if len(problems) != 1 || !strings.Contains(got, tt.problem) {
			t.Errorf("parse %q: problems %q, want %q", tt.file, problems, tt.problem)
		}
		if a, ok := users["alice"]; ok && a.hash != "" {
			t.Errorf("parse %q: alice not locked: %+v", tt.file, a)
		}
		if users["bob"].hash == "" {
			t.Errorf("parse %q: bob lost", tt.file)
		}
		if strings.Contains(got, "short") || strings.Contains(got, "xyz") || strings.Contains(got, "plaintext") {
			t.Errorf("parse %q: problem quotes the hash: %q", tt.file, got)
		}
	}
}

// A file written by the htpasswd tool itself parses.
func TestParseFileFromTool(t *testing.T) {
	htpasswd := sluicetest.NeedTool(t, "htpasswd", "apache2-utils")
	path := filepath.Join(t.TempDir(), "users")
	for i, u := range []struct{ flag, name, pw string }{
		{"-B", "bcrypt", "b-pass"}, {"-m", "md5", "m-pass"}, {"-s", "sha", "s-pass"},
	} {
		args := []string{"-b", u.flag, path, u.name, u.pw}
		if i == 0 {
			args = append([]string{"-c"}, args...)
		}
		if out, err := exec.Command(htpasswd, args...).CombinedOutput(); err != nil {
			t.Fatalf("htpasswd %v: %v\n%s", args, err, out)
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	users, problems := parse(data, path)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	for name, pw := range map[string]string{"bcrypt": "b-pass", "md5": "m-pass", "sha": "s-pass"} {
		if !verifyHash(users[name].hash, []byte(pw)) {
			t.Errorf("%s: %q does not verify", name, users[name].hash)
		}
	}
}
