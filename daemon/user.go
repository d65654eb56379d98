package daemon

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"syscall"

	"github.com/sluice-server/sluice/certs"
	"github.com/sluice-server/sluice/config"
)

// credentials are the user, group and supplementary groups a config's
// user and group keys resolve to.
type credentials struct {
	user   string // as written, for messages
	uid    int
	gid    int
	groups []int // the user's groups, gid among them
}

// lookupCredentials resolves user (a name or a numeric id) and group
// ("": the user's primary group).
func lookupCredentials(user, group string) (*credentials, error) {
	u, err := config.LookupUser(user)
	if err != nil {
		return nil, fmt.Errorf("user %s: %w", user, err)
	}
	c := &credentials{user: user}
	c.uid, _ = strconv.Atoi(u.Uid)
	c.gid, _ = strconv.Atoi(u.Gid)
	if group != "" {
		g, err := config.LookupGroup(group)
		if err != nil {
			return nil, fmt.Errorf("group %s: %w", group, err)
		}
		c.gid, _ = strconv.Atoi(g.Gid)
	}
	ids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("user %s: its groups: %w", user, err)
	}
	for _, id := range ids {
		if n, err := strconv.Atoi(id); err == nil && !slices.Contains(c.groups, n) {
			c.groups = append(c.groups, n)
		}
	}
	if !slices.Contains(c.groups, c.gid) {
		c.groups = append(c.groups, c.gid)
	}
	return c, nil
}

// current reports whether the process already runs as c: its real and
// effective user and group ids are c's.
func (c *credentials) current() bool {
	return os.Getuid() == c.uid && os.Geteuid() == c.uid && os.Getgid() == c.gid && os.Getegid() == c.gid
}

// owner is c as the owner of acme data directories.
func (c *credentials) owner() *certs.Owner {
	return &certs.Owner{User: c.user, UID: c.uid, GID: c.gid}
}

// ACMEOwner returns who a process running as root, serving a config
// whose keys user and group are given, hands the acme sections' data
// directories to (certs.Issuer.Issue): nil if user is "" or this process
// does not run as root.
func ACMEOwner(user, group string) (*certs.Owner, error) {
	if user == "" || os.Geteuid() != 0 {
		return nil, nil
	}
	c, err := lookupCredentials(user, group)
	if err != nil {
		return nil, err
	}
	return c.owner(), nil
}

// CheckUser reports whether this process can serve as user and group (a
// config's keys; "" for user needs nothing): it already runs as them, or
// it runs as root and can switch to them. Otherwise it says why not.
func CheckUser(user, group string) error {
	if user == "" {
		return nil
	}
	c, err := lookupCredentials(user, group)
	if err != nil {
		return err
	}
	return c.check()
}

func (c *credentials) check() error {
	if c.current() || os.Geteuid() == 0 {
		return nil
	}
	return fmt.Errorf("user %s: this process runs as uid %d, gid %d; only root can switch to uid %d, gid %d: "+
		"leave user out of the config to serve as the user that starts the server (a systemd unit's User=), or start it as root",
		c.user, os.Geteuid(), os.Getegid(), c.uid, c.gid)
}

// switchTo makes the process, which runs as root, run as c: its
// supplementary groups, then its group, then its user (real, effective
// and saved ids; on Linux the Go runtime applies each change to every
// thread).
func (c *credentials) switchTo() error {
	if err := syscall.Setgroups(c.groups); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(c.gid); err != nil {
		return fmt.Errorf("setgid %d: %w", c.gid, err)
	}
	if err := syscall.Setuid(c.uid); err != nil {
		return fmt.Errorf("setuid %d: %w", c.uid, err)
	}
	return nil
}

// switchUser makes the process serve as cfg's user and group, if it
// names one: the files the config's components write to and the server's
// log file are given to the user first, so that it can reopen them, and
// the data directories of cfg's acme sections (made if missing), so that
// it can keep its certificates there.
func (s *Server) switchUser(cfg *config.Config) error {
	if cfg.User == "" {
		return nil
	}
	c, err := lookupCredentials(cfg.User, cfg.Group)
	if err != nil {
		return err
	}
	if c.current() {
		if c.uid == 0 {
			s.logger().Info("serving as root, as the config's user says: every component acts with root's rights", "user", c.user)
		}
		return nil
	}
	if err := c.check(); err != nil {
		return err
	}
	if err := cfg.Chown(c.uid, c.gid); err != nil {
		return fmt.Errorf("giving the log files to user %s: %w", c.user, err)
	}
	if err := s.out.chown(c.uid, c.gid); err != nil {
		return fmt.Errorf("giving the log file to user %s: %w", c.user, err)
	}
	if !s.ACMECacheOnly {
		for _, a := range cfg.ACMESections() {
			if err := c.owner().GiveData(a); err != nil {
				return err
			}
		}
	}
	if err := c.switchTo(); err != nil {
		return err
	}
	s.logger().Info("serving as user", "user", c.user, "uid", c.uid, "gid", c.gid, "groups", c.groups)
	return nil
}
