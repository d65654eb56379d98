package htpasswd

import (
	"strings"
	"testing"
)

// FuzzParse parses arbitrary htpasswd files. Whatever the file holds: a
// user is taken only from a line that names it before its first colon; a
// user listed twice is locked; a problem is one line that quotes the user
// with its control bytes escaped, so none reaches the log raw.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"alice:$apr1$salt$hash\n", "bob:!\n", "bob:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=\nbob:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=",
		"# comment\n\n  \ncarol\n", ":nohash\n", "dave:$2y$05$" + strings.Repeat("a", 53) + "\r\n", "e\x1bvil:plain\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) {
		users, problems := parse([]byte(data), "users")
		lines := strings.Split(data, "\n")
		for name, u := range users {
			if name == "" || strings.ContainsAny(name, ":\n") {
				t.Fatalf("user %q from %q", name, data)
			}
			n := 0
			var hash string
			for _, l := range lines {
				if rest, ok := strings.CutPrefix(strings.TrimRight(l, "\r"), name+":"); ok {
					n++
					hash = strings.TrimSpace(rest)
				}
			}
			switch {
			case n == 0:
				t.Fatalf("user %q is on no line of %q", name, data)
			case n > 1 && u.hash != "":
				t.Fatalf("user %q listed %d times is not locked", name, n)
			case u.hash != "" && (u.hash != hash || u.class == ""):
				t.Fatalf("user %q: hash %q class %q, line says %q", name, u.hash, u.class, hash)
			}
		}
		for _, p := range problems {
			if !strings.HasPrefix(p, "users:") || strings.ContainsAny(p, "\n\r\x00\x1b") {
				t.Fatalf("problem %q", p)
			}
		}
	})
}
