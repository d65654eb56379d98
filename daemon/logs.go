package daemon

import (
	"cmp"
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
	if err := s.out.Reopen(); err != nil {
		log.Error("cannot reopen the log", "error", err, FixAttr(config.FileFix(err)))
		errs = append(errs, err)
	}
	if err := s.sw.Config().Reopen(); err != nil {
		log.Error("cannot reopen a log file", "error", err, FixAttr(config.FileFix(err)))
		errs = append(errs, err)
	}
	log.Info("log files reopened")
	return errors.Join(errs...)
}

// logTarget is where a config's log section sends the records: a stream,
// or a file opened for appending.
type logTarget struct {
	w    io.Writer // the stream, or f
	f    *os.File
	path string
}

// openTarget opens the output l names.
func (s *Server) openTarget(l config.Log) (logTarget, error) {
	switch l.Output {
	case "stderr", "":
		return logTarget{w: cmp.Or[io.Writer](s.Stderr, os.Stderr)}, nil
	case "stdout":
		return logTarget{w: cmp.Or[io.Writer](s.Stdout, os.Stdout)}, nil
	}
	f, err := openLogFile(l.Output)
	if err != nil {
		return logTarget{}, err
	}
	return logTarget{w: f, f: f, path: l.Output}, nil
}

// setLog makes the server log as l asks for, to t, from now on: at Start,
// and again when a reload changes the log section. The previous file, if
// any, is closed once no record can be written to it.
func (s *Server) setLog(l config.Log, t logTarget) {
	s.out.set(t)
	s.logConfig = l
	opts := &slog.HandlerOptions{Level: l.Level}
	var h slog.Handler = slog.NewTextHandler(&s.out, opts)
	if l.Format == "json" {
		h = slog.NewJSONHandler(&s.out, opts)
	}
	log := slog.New(h)
	s.log.Store(log)
	if s.SetSlogDefault {
		if s.prevDefault == nil {
			s.prevDefault = slog.Default()
		}
		slog.SetDefault(log)
	}
}

// openLog sets up the server's log as l asks for.
func (s *Server) openLog(l config.Log) error {
	t, err := s.openTarget(l)
	if err != nil {
		return err
	}
	s.setLog(l, t)
	return nil
}

// closeLog undoes openLog: records go to Logger again.
func (s *Server) closeLog() {
	if s.prevDefault != nil {
		slog.SetDefault(s.prevDefault)
		s.prevDefault = nil
	}
	s.log.Store(nil)
	s.out.set(logTarget{w: io.Discard})
}

func openLogFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
}

// logOutput is where the server's log records go: the target of the
// config's log section, which Reopen opens again under its name and set
// replaces. Records written meanwhile go to one or the other, whole. It
// is safe for concurrent use.
type logOutput struct {
	mu sync.Mutex
	t  logTarget
}

func (o *logOutput) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.t.w == nil {
		return len(p), nil
	}
	return o.t.w.Write(p)
}

// set makes t the target, closing the previous one's file.
func (o *logOutput) set(t logTarget) {
	o.mu.Lock()
	old := o.t
	o.t = t
	o.mu.Unlock()
	if old.f != nil {
		old.f.Close()
	}
}

// chown gives the file, if the target is one, to uid and gid.
func (o *logOutput) chown(uid, gid int) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.t.f == nil {
		return nil
	}
	return o.t.f.Chown(uid, gid)
}

// Reopen opens the file's name again, which logrotate may have moved; a
// stream is left alone.
func (o *logOutput) Reopen() error {
	o.mu.Lock()
	path := o.t.path
	o.mu.Unlock()
	if path == "" {
		return nil
	}
	f, err := openLogFile(path)
	if err != nil {
		return err
	}
	o.mu.Lock()
	old := o.t.f
	if o.t.path != path { // moved meanwhile
		o.mu.Unlock()
		f.Close()
		return nil
	}
	o.t.w, o.t.f = f, f
	o.mu.Unlock()
	return old.Close()
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
