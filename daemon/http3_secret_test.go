package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// LoadQUICSecret makes the file once and reads it after; replaces, with
// a warning, a file that holds no secret; takes one others may read, with
// a warning; and fails where the file can be neither read nor made.
func TestLoadQUICSecret(t *testing.T) {
	valid := bytes.Repeat([]byte{0xab}, 32)
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, file string) // nil: no file
		want    []byte                          // the secret, or nil for a new one
		warning string                          // in the log, or "" for none
		err     bool
	}{
		{name: "absent: made"},
		{name: "kept", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, formatQUICSecret(valid), 0o600)
		}, want: valid},
		{name: "with white space", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, []byte("  "+strings.ToUpper(string(formatQUICSecret(valid)))+"\r\n"), 0o600)
		}, want: valid},
		{name: "short", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, []byte("abab\n"), 0o600)
		}, warning: "not one Sluice wrote"},
		{name: "empty", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, nil, 0o600)
		}, warning: "not one Sluice wrote"},
		{name: "not hexadecimal", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, bytes.Repeat([]byte("z"), 64), 0o600)
		}, warning: "not one Sluice wrote"},
		{name: "others may read it", setup: func(t *testing.T, file string) {
			os.MkdirAll(filepath.Dir(file), 0o700)
			os.WriteFile(file, formatQUICSecret(valid), 0o644)
			os.Chmod(file, 0o644)
		}, want: valid, warning: "others may read"},
		{name: "no directory can be made", setup: func(t *testing.T, file string) {
			os.WriteFile(filepath.Dir(file), []byte("a file, not a directory"), 0o600)
		}, err: true},
		{name: "a directory in its place", setup: func(t *testing.T, file string) {
			os.MkdirAll(file, 0o700)
		}, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "quic", "site-1234.key")
			if tc.setup != nil {
				tc.setup(t, file)
			}
			var logged bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logged, nil))
			secret, err := LoadQUICSecret(file, log)
			if tc.err {
				if err == nil {
					t.Fatalf("no error; secret %x", secret)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(secret) != 32 {
				t.Fatalf("a secret of %d bytes", len(secret))
			}
			if tc.want != nil && !bytes.Equal(secret, tc.want) {
				t.Errorf("secret %x, want the file's %x", secret, tc.want)
			}
			if tc.want == nil && bytes.Equal(secret, valid) {
				t.Errorf("the file's old secret was kept")
			}
			if tc.warning == "" && logged.Len() > 0 || !strings.Contains(logged.String(), tc.warning) {
				t.Errorf("logged %q, want a warning with %q", logged.String(), tc.warning)
			}
			if strings.Contains(logged.String(), string(formatQUICSecret(secret)[:64])) {
				t.Errorf("the secret was logged: %q", logged.String())
			}
			again, err := LoadQUICSecret(file, nil)
			if err != nil || !bytes.Equal(again, secret) {
				t.Errorf("read again: %x %v, want %x", again, err, secret)
			}
			if tc.want != nil {
				return // the test's file, as it was
			}
			fi, err := os.Stat(file)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("the file's mode is %#o, want 0600", fi.Mode().Perm())
			}
			if di, _ := os.Stat(filepath.Dir(file)); tc.setup == nil && di.Mode().Perm() != 0o700 {
				t.Errorf("the directory's mode is %#o, want 0700", di.Mode().Perm())
			}
			ents, _ := os.ReadDir(filepath.Dir(file))
			if len(ents) != 1 {
				t.Errorf("the directory holds %d files, want the secret's alone", len(ents))
			}
		})
	}
}

// Processes that start at once with no file all get the one secret that
// is written.
func TestLoadQUICSecretAtOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "quic", "site.key")
	const n = 16
	secrets := make([][]byte, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			s, err := LoadQUICSecret(file, nil)
			if err != nil {
				t.Error(err)
			}
			secrets[i] = s
		})
	}
	wg.Wait()
	kept, err := LoadQUICSecret(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range secrets {
		if !bytes.Equal(s, kept) {
			t.Errorf("loader %d got %x, the file holds %x", i, s, kept)
		}
	}
}

// A Server with QUICSecretFile derives its keys from the file's secret;
// one whose file cannot be made logs a warning and makes its own.
func TestServerQUICSecretFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "quic", "site.key")
	secret, err := LoadQUICSecret(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	s := &Server{QUICSecretFile: file, Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	if got := s.quicSecret(); !bytes.Equal(got, secret) {
		t.Errorf("secret %x, want the file's %x", got, secret)
	}
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o600)
	s = &Server{QUICSecretFile: filepath.Join(blocked, "site.key"), Logger: slog.New(slog.NewTextHandler(&logged, nil))}
	if got := s.quicSecret(); got != nil {
		t.Errorf("secret %x from a file that cannot be made", got)
	}
	if !strings.Contains(logged.String(), "cannot keep the QUIC secret") {
		t.Errorf("logged %q, want a warning", logged.String())
	}
	given := bytes.Repeat([]byte{1}, 32)
	s = &Server{QUICSecret: given, QUICSecretFile: file}
	if got := s.quicSecret(); !bytes.Equal(got, given) {
		t.Errorf("secret %x, want QUICSecret's", got)
	}
}

// The file's name depends on the config file's path, under
// $STATE_DIRECTORY when it is set.
func TestQUICSecretFile(t *testing.T) {
	t.Setenv("STATE_DIRECTORY", "/var/lib/sluice:/var/lib/other")
	a, err := QUICSecretFile("/etc/sluice/site.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if dir := filepath.Dir(a); dir != "/var/lib/sluice/quic" || !strings.HasPrefix(filepath.Base(a), "site-") || !strings.HasSuffix(a, ".key") {
		t.Errorf("QUICSecretFile = %s", a)
	}
	b, _ := QUICSecretFile("/etc/other/site.yaml")
	if a == b {
		t.Errorf("two configs share %s", a)
	}
	t.Setenv("STATE_DIRECTORY", "")
	t.Setenv("XDG_CACHE_HOME", "/tmp/cache")
	c, _ := QUICSecretFile("/etc/sluice/site.yaml")
	if filepath.Dir(c) != "/tmp/cache/sluice/quic" {
		t.Errorf("without STATE_DIRECTORY: %s", c)
	}
}

// parseQUICSecret takes what formatQUICSecret writes, and nothing that
// is not 32 bytes.
func FuzzParseQUICSecret(f *testing.F) {
	f.Add(formatQUICSecret(bytes.Repeat([]byte{7}, 32)))
	f.Add([]byte("abab"))
	f.Add([]byte(" " + strings.Repeat("0F", 32) + "\n"))
	f.Add([]byte(strings.Repeat("g", 64)))
	f.Fuzz(func(t *testing.T, b []byte) {
		secret, err := parseQUICSecret(b)
		if err != nil {
			return
		}
		if len(secret) != 32 {
			t.Fatalf("%q: a secret of %d bytes", b, len(secret))
		}
		again, err := parseQUICSecret(formatQUICSecret(secret))
		if err != nil || !bytes.Equal(again, secret) {
			t.Fatalf("%q: formatted and parsed again: %x %v", b, again, err)
		}
	})
}
