package config

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const adminRoutes = "routes:\n  - match: /\n    pipeline: [{text: hi}]\n"

func TestAdminSection(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "run"), 0o755)
	good := filepath.Join(dir, "tokens")
	os.WriteFile(good, []byte("# the deploy jobs\nci 0123456789abcdef0123\n\nops  fedcba9876543210fedc\n"), 0o600)
	open := filepath.Join(dir, "open-tokens")
	os.WriteFile(open, []byte("ci 0123456789abcdef0123\n"), 0o644)
	short := filepath.Join(dir, "short-tokens")
	os.WriteFile(short, []byte("ci 0123456789abcdef0123\nops short\n"), 0o600)
	tests := []struct {
		name    string
		section string
		want    *Admin // Socket, Listen, Tokens checked
		errs    []string
	}{
		{"defaults", "admin: {}", &Admin{Socket: filepath.Join(dir, "admin.sock")}, nil},
		{"a null section", "admin:", &Admin{Socket: filepath.Join(dir, "admin.sock")}, nil},
		{"a socket", "admin: {socket: run/a.sock}", &Admin{Socket: filepath.Join(dir, "run/a.sock")}, nil},
		{"loopback with tokens", "admin: {listen: 127.0.0.1:2019, tokens: {ci: 0123456789abcdef0123}}",
			&Admin{Listen: "127.0.0.1:2019", Tokens: map[string]string{"ci": "0123456789abcdef0123"}}, nil},
		{"ipv6 loopback", "admin: {listen: '[::1]:2019', tokens: {ci: 0123456789abcdef0123}}",
			&Admin{Listen: "[::1]:2019", Tokens: map[string]string{"ci": "0123456789abcdef0123"}}, nil},
		{"a token file", "admin: {listen: localhost:2019, token_file: tokens}",
			&Admin{Listen: "localhost:2019", Tokens: map[string]string{"ci": "0123456789abcdef0123", "ops": "fedcba9876543210fedc"}}, nil},
		{"every interface", "admin: {listen: ':2019', tokens: {ci: 0123456789abcdef0123}}", nil,
			[]string{"sluice.yaml:1:17: admin.listen: address :2019 listens on every interface: the admin API listens on loopback only, e.g. 127.0.0.1:2019"}},
		{"not loopback", "admin: {listen: 10.0.0.1:2019, tokens: {ci: 0123456789abcdef0123}}", nil,
			[]string{"sluice.yaml:1:17: admin.listen: address 10.0.0.1:2019 is not a loopback address"}},
		{"a unix listen", "admin: {listen: 'unix:/a.sock'}", nil, []string{"1:17: admin.listen: a Unix socket is written socket: /path"}},
		{"tcp without a token", "admin: {listen: 127.0.0.1:2019}", nil,
			[]string{"1:17: admin.listen: a TCP address needs bearer tokens"}},
		{"socket and listen", "admin: {socket: a.sock, listen: 127.0.0.1:2019, tokens: {ci: 0123456789abcdef0123}}", nil,
			[]string{"admin: socket and listen both set"}},
		{"tokens on a socket", "admin: {socket: a.sock, tokens: {ci: 0123456789abcdef0123}}", nil,
			[]string{"admin: tokens are for listen"}},
		{"a short token", "admin: {listen: 127.0.0.1:2019, tokens: {ci: abc}}", nil,
			[]string{`1:46: admin token "ci": want at least 16 characters`}},
		{"a token twice", "admin: {listen: 127.0.0.1:2019, tokens: {ci: 0123456789abcdef0123, ops: 0123456789abcdef0123}}", nil,
			[]string{`admin token "ops" is the same as "ci"'s`}},
		{"a token file others read", "admin: {listen: 127.0.0.1:2019, token_file: open-tokens}", nil,
			[]string{"is readable by others (mode 0644): chmod 600"}},
		{"a bad line in a token file", "admin: {listen: 127.0.0.1:2019, token_file: short-tokens}", nil,
			[]string{short + `:2:1: admin token "ops": want at least 16 characters`}},
		{"a missing token file", "admin: {listen: 127.0.0.1:2019, token_file: nope}", nil,
			[]string{"admin.token_file: open " + filepath.Join(dir, "nope")}},
		{"an unknown key", "admin: {sockt: a.sock}", nil, []string{`sockt`}},
		{"no such directory", "admin: {socket: nowhere/a.sock}", nil, []string{"1:17: admin.socket: directory " + filepath.Join(dir, "nowhere") + " does not exist"}},
		{"a path too long", "admin: {socket: /" + strings.Repeat("x", 120) + "}", nil, []string{"admin.socket: the path is 121 bytes, over the 107"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := tt.section + "\n" + adminRoutes
			cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte(src))
			if tt.errs != nil {
				if err == nil {
					cfg.Close()
					t.Fatalf("Parse(%q) = nil error, want %q", tt.section, tt.errs)
				}
				for _, want := range tt.errs {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("Parse(%q) = %v, want %q", tt.section, err, want)
					}
				}
				if strings.Contains(err.Error(), "0123456789abcdef0123") {
					t.Errorf("an error shows a token: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.section, err)
			}
			defer cfg.Close()
			a := cfg.Admin
			if a == nil {
				t.Fatalf("Parse(%q): no Admin", tt.section)
			}
			if a.Socket != tt.want.Socket || a.Listen != tt.want.Listen || len(a.Tokens) != len(tt.want.Tokens) {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.section, a, tt.want)
			}
			for k, v := range tt.want.Tokens {
				if a.Tokens[k] != v {
					t.Errorf("token %s = %q, want %q", k, a.Tokens[k], v)
				}
			}
			if a.State == "" {
				t.Errorf("no state file")
			}
			var out strings.Builder
			cfg.Explain(&out)
			if !strings.Contains(out.String(), "\nadmin ") || strings.Contains(out.String(), "0123456789abcdef0123") {
				t.Errorf("Explain shows no admin line, or shows a token:\n%s", out.String())
			}
		})
	}
	cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte(adminRoutes))
	if err != nil || cfg.Admin != nil {
		t.Errorf("a config without admin: %v, Admin %+v; want none", err, cfg.Admin)
	}
}

// The default state file is one per config file, under STATE_DIRECTORY
// when systemd gives one.
func TestDefaultAdminState(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/sluice:/other")
	a, err := DefaultAdminState("/etc/sluice/site.yaml")
	b, _ := DefaultAdminState("/etc/sluice/other/site.yaml")
	if err != nil || !strings.HasPrefix(a, "/var/lib/sluice/admin/site-") || !strings.HasSuffix(a, ".json") || a == b {
		t.Errorf("DefaultAdminState = %q, %q, %v; want two files under /var/lib/sluice/admin", a, b, err)
	}
}

// FuzzAdminListen: badAdminListen never panics, and what it accepts is a
// TCP address on a loopback host.
func FuzzAdminListen(f *testing.F) {
	for _, s := range []string{"127.0.0.1:2019", "[::1]:2019", "localhost:2019", ":2019", "0.0.0.0:1", "10.0.0.1:2", "unix:/a", "127.0.0.1", "[::ffff:127.0.0.1]:80", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if badAdminListen(s) != "" {
			return
		}
		host, _, err := net.SplitHostPort(s)
		if err != nil {
			t.Fatalf("%q accepted: %v", s, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			t.Fatalf("%q accepted: host %q is not loopback", s, host)
		}
	})
}

// FuzzAdminSection: the admin section's parser never panics, and a
// section it accepts listens somewhere, with tokens when on TCP.
func FuzzAdminSection(f *testing.F) {
	for _, s := range []string{"{}", "{socket: a.sock}", "{listen: 127.0.0.1:2019, tokens: {ci: 0123456789abcdef0123}}", "{listen: ':1'}", "[1]", "{tokens: {a: b}}", "{state: ''}"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte("admin: "+s+"\n"+adminRoutes))
		if err != nil {
			return
		}
		defer cfg.Close()
		a := cfg.Admin
		if a == nil {
			return // s ended the section early: a comment, say
		}
		if (a.Socket == "") == (a.Listen == "") {
			t.Fatalf("admin: %s accepted as %+v: want a socket or an address", s, a)
		}
		if a.Listen != "" && len(a.Tokens) == 0 {
			t.Fatalf("admin: %s accepted with an address and no token", s)
		}
	})
}

// FuzzTokenFile: a token file never makes the parser panic, and what it
// accepts are tokens of at least 16 printable characters, one per name,
// no two alike.
func FuzzTokenFile(f *testing.F) {
	for _, s := range []string{"ci 0123456789abcdef0123\n", "# c\n\nci  0123456789abcdef0123  \nops fedcba9876543210fedc", "ci short", "ci", "ci a b c d e f g h i j k l m n o p", "a 0123456789abcdef0123\na 0123456789abcdef0124\n", "\x00 \xff"} {
		f.Add(s)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, s string) {
		file := filepath.Join(dir, "tokens")
		if err := os.WriteFile(file, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := new(Loader).Parse(filepath.Join(dir, "sluice.yaml"), []byte("admin: {listen: 127.0.0.1:2019, token_file: tokens}\n"+adminRoutes))
		if err != nil {
			return
		}
		defer cfg.Close()
		seen := map[string]bool{}
		for name, tok := range cfg.Admin.Tokens {
			if len(tok) < MinTokenLength || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }) || name == "" || seen[tok] {
				t.Fatalf("token file %q accepted %q: %q", s, name, tok)
			}
			seen[tok] = true
		}
		if len(cfg.Admin.Tokens) == 0 {
			t.Fatalf("token file %q accepted with no token", s)
		}
	})
}
