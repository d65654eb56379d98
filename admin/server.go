package admin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluice-server/sluice/config"
)

// Server serves the admin API of one config's admin section for a
// Backend. Set the exported fields before Start; Start and Close may be
// called once each. The API's requests are served on goroutines of
// their own; changes (POST /load, PUT and PATCH) are applied one at a
// time.
type Server struct {
	// Config is the admin section: where to listen, the tokens, the
	// state file. Required.
	Config *config.Admin

	// Backend is what the API reads and changes. Required.
	Backend Backend

	// Logger receives every change, with who made it. Nil means
	// slog.Default().
	Logger *slog.Logger

	// UID and GID, when UID is not negative and this process runs as
	// root, own the Unix socket: the user the server serves as. Set
	// UID to -1 to keep the process's own (the zero value, 0, is root's).
	UID, GID int

	// Replace, if set, takes the socket over from another process
	// listening on it: the old master of a binary upgrade, whose API
	// then stops being reached (its Close leaves the new socket alone).
	Replace bool

	// Resumed is the state the server started from (sluice serve
	// --resume), which the state file keeps until the next change; nil
	// when it started from its config file.
	Resumed *State

	mu    sync.Mutex // serializes changes
	stMu  sync.Mutex // guards state and its saves
	state State
	ln    net.Listener
	srv   *http.Server
	path  string      // the socket file Close removes
	made  os.FileInfo // what Start made at path: Close removes only that
	done  chan struct{}
}

func (s *Server) log() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// Start opens the API's socket (or TCP address) and serves it until
// Close. A Unix socket is created with mode 0600, owned by UID and GID;
// a stale socket file at its path (one no process listens on) is
// replaced, and one another process listens on is an error.
func (s *Server) Start() error {
	if s.Config == nil || s.Backend == nil {
		return errors.New("admin: Server.Config and Backend are required")
	}
	s.stMu.Lock()
	if s.Resumed != nil {
		s.state = *s.Resumed
	} else {
		_, data := s.Backend.Running()
		s.state = State{Config: string(data)}
	}
	s.state.File, _ = s.Backend.Running()
	s.save() // the state is what serves: a --resume later starts from it
	s.stMu.Unlock()
	var err error
	if s.Config.Listen != "" {
		s.ln, err = net.Listen("tcp", s.Config.Listen)
	} else {
		s.ln, s.made, err = listenUnix(s.Config.Socket, s.UID, s.GID, s.Replace)
		s.path = s.Config.Socket
	}
	if err != nil {
		return fmt.Errorf("admin API: %w", err)
	}
	s.srv = &http.Server{
		Handler:           s.handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       time.Minute,
		MaxHeaderBytes:    16 << 10,
		ConnContext:       connContext,
		ErrorLog:          slog.NewLogLogger(s.log().Handler(), slog.LevelWarn),
	}
	s.done = make(chan struct{})
	go func() {
		defer close(s.done)
		s.srv.Serve(s.ln)
	}()
	s.log().Info("admin API listening", "addr", s.Addr().String())
	return nil
}

// Addr returns the address the API listens on; nil before Start.
func (s *Server) Addr() net.Addr {
	if s.ln == nil {
		return nil
	}
	if s.path != "" {
		return &net.UnixAddr{Net: "unix", Name: s.path} // bound elsewhere, then renamed
	}
	return s.ln.Addr()
}

// Close stops the API: the listener is closed, requests under way get a
// few seconds to finish, and the socket file is removed (unless another
// server replaced it).
func (s *Server) Close() error {
	if s.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(ctx)
	<-s.done
	if s.path != "" {
		// Not a socket another server made there since (Replace).
		if fi, err := os.Lstat(s.path); err == nil && os.SameFile(fi, s.made) {
			os.Remove(s.path)
		}
	}
	return err
}
