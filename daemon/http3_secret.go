package daemon

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// The QUIC secret, kept in a file. A server's HTTP/3 listeners derive
// their stateless reset key and the key of their address-validation
// tokens from one 32-byte secret (see quicKeys). Kept in a file, it
// outlives the process: a client whose server was restarted (or crashed)
// sends its next datagrams to a process that knows nothing of its
// connection, and is answered with a stateless reset (RFC 9000 §10.3) it
// accepts, as the token in it is made with the same key, so it ends the
// connection at once and opens a new one rather than wait for its idle
// timeout; and a Retry token issued before the restart is still good.

// QUICSecretFile returns the file in which the QUIC secret of the server
// of config file file is kept: in "quic" under the service's state
// directory when systemd gives it one ($STATE_DIRECTORY, its first path),
// "sluice/quic" under the user's cache directory otherwise, named after
// the config file's base name and a hash of its absolute path, so that
// two servers do not share one. It creates nothing.
func QUICSecretFile(file string) (string, error) {
	dir, _, _ := strings.Cut(os.Getenv("STATE_DIRECTORY"), ":")
	if filepath.IsAbs(dir) {
		dir = filepath.Join(dir, "quic")
	} else {
		cache, err := os.UserCacheDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(cache, "sluice", "quic")
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	sum := sha256.Sum256([]byte(abs))
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	return filepath.Join(dir, base+"-"+hex.EncodeToString(sum[:4])+".key"), nil
}

// QUICSecretSize is the size of a QUIC secret, in bytes.
const QUICSecretSize = 32

// quicSecretSize is QUICSecretSize, as this package spells it.
const quicSecretSize = QUICSecretSize

// KeptQUICSecret returns the secret LoadQUICSecret keeps in file, or nil
// (with a warning to log, which must not be nil) when none can be kept:
// the caller then makes a random one, which a restart does not share.
func KeptQUICSecret(file string, log *slog.Logger) []byte {
	s, err := LoadQUICSecret(file, log)
	if err != nil {
		log.Warn("cannot keep the QUIC secret in a file: a restarted server will not end its predecessor's HTTP/3 connections at once", "error", err)
	}
	return s
}

// LoadQUICSecret returns the QUIC secret kept in file, making it if the
// file does not exist: 32 random bytes, written as 64 hexadecimal digits
// and a newline to a file of mode 0600 (its directory made 0700 if need
// be) that appears whole or not at all (written aside, then linked into
// place; of two processes making it at once, both get the one that
// won). A file that does not hold a secret (short, not hexadecimal: not
// one this function wrote) is replaced by a new secret, with a warning
// to log: the secret is worth only the connections of the previous
// process, which the new one then resets no more than it would without
// the file. A file others may read is used, with a warning: whoever
// reads it can end the server's connections with forged resets. An
// error (the file cannot be read, or made) means no secret is kept; log
// may be nil. LoadQUICSecret is safe for concurrent use.
func LoadQUICSecret(file string, log *slog.Logger) ([]byte, error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	for range 2 { // a second time if another process made the file meanwhile
		b, err := os.ReadFile(file)
		if err == nil {
			secret, perr := parseQUICSecret(b)
			if perr != nil {
				log.Warn("the QUIC secret's file is not one Sluice wrote; a new secret replaces it", "file", file, "error", perr)
				return writeQUICSecret(file, true)
			}
			if fi, err := os.Stat(file); err == nil && fi.Mode().Perm()&0o077 != 0 {
				log.Warn("others may read the QUIC secret's file, and end the server's HTTP/3 connections with it", "file", file, "mode", fmt.Sprintf("%#o", fi.Mode().Perm()), "fix", "chmod 600 "+file)
			}
			return secret, nil
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		secret, err := writeQUICSecret(file, false)
		if !errors.Is(err, fs.ErrExist) {
			return secret, err
		}
	}
	return nil, fmt.Errorf("%s: made and removed again while it was read", file)
}

// writeQUICSecret writes a new secret to file: aside, then linked into
// place (an error wrapping fs.ErrExist if the file exists), or renamed
// over it with replace.
func writeQUICSecret(file string, replace bool) ([]byte, error) {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	secret := make([]byte, quicSecretSize)
	rand.Read(secret)
	tmp, err := os.CreateTemp(dir, ".quic-*.tmp") // mode 0600
	if err != nil {
		return nil, err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(formatQUICSecret(secret))
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	if replace {
		err = os.Rename(tmp.Name(), file)
	} else {
		err = os.Link(tmp.Name(), file)
	}
	if err != nil {
		return nil, err
	}
	if d, err := os.Open(dir); err == nil { // the new name, on disk
		d.Sync()
		d.Close()
	}
	return secret, nil
}

// formatQUICSecret is the content of a secret's file: 64 lowercase
// hexadecimal digits and a newline.
func formatQUICSecret(secret []byte) []byte {
	return []byte(hex.EncodeToString(secret) + "\n")
}

// parseQUICSecret reads a secret's file: 64 hexadecimal digits, with
// white space around them (an editor's newline) allowed.
func parseQUICSecret(b []byte) ([]byte, error) {
	b = bytes.TrimSpace(b)
	if len(b) != 2*quicSecretSize {
		return nil, fmt.Errorf("want %d hexadecimal digits, found %d bytes", 2*quicSecretSize, len(b))
	}
	secret := make([]byte, quicSecretSize)
	if _, err := hex.Decode(secret, b); err != nil {
		return nil, fmt.Errorf("want %d hexadecimal digits: %v", 2*quicSecretSize, err)
	}
	return secret, nil
}
