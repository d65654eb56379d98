package daemon

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/sluice-server/sluice/config"
)

// ReopenLogs opens the log files again under their names, which a log
// rotator (logrotate) may have moved away: the server's own log and the
// files the config's components write to (the access logs). Records
// logged meanwhile go to the old file until the new one is open. It logs
// what cannot be reopened and returns the errors joined; it returns
// ErrNotRunning before Start and after Shutdown.
func (s *Server) ReopenLogs() error {
	if err := s.lockRunning(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	log := s.logger()
	var errs []error
	if s.logOut != nil {
		if err := s.logOut.Reopen(); err != nil {
			log.Error("cannot reopen the log", "error", err)
			errs = append(errs, err)
		}
	}
	if err := s.sw.Config().Reopen(); err != nil {
		log.Error("cannot reopen a log file", "error", err)
		errs = append(errs, err)
	}
	log.Info("log files reopened")
	return errors.Join(errs...)
}

// openLog sets up the server's log as l asks for.
func (s *Server) openLog(l config.Log) error {
	var w io.Writer
	switch l.Output {
	case "stderr", "":
		w = s.Stderr
		if w == nil {
			w = os.Stderr
		}
	case "stdout":
		w = s.Stdout
		if w == nil {
			w = os.Stdout
		}
	default:
		f, err := openLogFile(l.Output)
		if err != nil {
			return err
		}
		s.logOut, w = f, f
	}
	opts := &slog.HandlerOptions{Level: l.Level}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if l.Format == "json" {
		h = slog.NewJSONHandler(w, opts)
	}
	log := slog.New(h)
	s.log.Store(log)
	if s.SetSlogDefault {
		s.prevDefault = slog.Default()
		slog.SetDefault(log)
	}
	return nil
}

// closeLog undoes openLog: records go to Logger again.
func (s *Server) closeLog() {
	if s.prevDefault != nil {
		slog.SetDefault(s.prevDefault)
		s.prevDefault = nil
	}
	s.log.Store(nil)
	if s.logOut != nil {
		s.logOut.Close()
		s.logOut = nil
	}
}

// logFile is an append-only log file that can be reopened under its name.
// It is safe for concurrent use.
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

func openLogFile(path string) (*logFile, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	return &logFile{path: path, f: f}, nil
}

func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// Reopen opens the file's name again, which logrotate may have moved.
func (l *logFile) Reopen() error {
	f, err := os.OpenFile(l.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	l.mu.Lock()
	old := l.f
	l.f = f
	l.mu.Unlock()
	return old.Close()
}

func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// logHandler hands records to the server's log of the moment (see
// Server.logger).
type logHandler struct{ s *Server }

func (h logHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.s.logger().Handler().Enabled(ctx, l)
}

func (h logHandler) Handle(ctx context.Context, rec slog.Record) error {
	return h.s.logger().Handler().Handle(ctx, rec)
}

func (h logHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return h.s.logger().Handler().WithAttrs(as)
}

func (h logHandler) WithGroup(name string) slog.Handler {
	return h.s.logger().Handler().WithGroup(name)
}
