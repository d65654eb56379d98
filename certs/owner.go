package certs

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"golang.org/x/crypto/acme/autocert"

	"github.com/sluice-server/sluice/config"
)

// An Owner is the user and group that an acme section's data directory,
// and the files written into it, are given to when a process running as
// root obtains certificates for processes running as them.
type Owner struct {
	User     string // as the config writes it, for messages
	UID, GID int
}

// GiveData makes a's data directory (0700, as autocert.DirCache does)
// if it is missing and gives it, and the files already in it (a run as
// root left them, say), to o's user and group, for a process running as
// them to write and read its files. Only root can.
func (o *Owner) GiveData(a *config.ACME) error {
	if err := os.MkdirAll(a.Data, 0o700); err != nil {
		return fmt.Errorf("tls.acme.data: %w", err)
	}
	if err := os.Chown(a.Data, o.UID, o.GID); err != nil {
		return fmt.Errorf("tls.acme.data: giving it to user %s: %w", o.User, err)
	}
	entries, err := os.ReadDir(a.Data)
	if err != nil {
		return fmt.Errorf("tls.acme.data: %w", err)
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := chownFile(filepath.Join(a.Data, e.Name()), o.UID, o.GID); err != nil {
			return fmt.Errorf("tls.acme.data: giving %s to user %s: %w", e.Name(), o.User, err)
		}
	}
	return nil
}

// chownCache is a DirCache whose files are given to a user as they are
// written.
type chownCache struct {
	autocert.DirCache
	uid, gid int
}

func (c chownCache) Put(ctx context.Context, name string, data []byte) error {
	if err := c.DirCache.Put(ctx, name, data); err != nil {
		return err
	}
	return os.Chown(filepath.Join(string(c.DirCache), filepath.Clean("/"+name)), c.uid, c.gid)
}
