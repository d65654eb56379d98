//go:build linux

package supervisor

import (
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
)

// lineWriter serialises whole lines to w, for the master's records and
// the workers' relayed ones.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// set makes the lines go to w from now on.
func (l *lineWriter) set(w io.Writer) {
	l.mu.Lock()
	l.w = w
	l.mu.Unlock()
}

// WriteLine writes s and a newline in one write.
func (l *lineWriter) WriteLine(s string) {
	l.Write([]byte(s + "\n"))
}

// reopenFile is an append-only file that can be reopened under its name
// (after logrotate moved it).
type reopenFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
}

func (r *reopenFile) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.f.Write(p)
}

// Reopen opens the name again.
func (r *reopenFile) Reopen() error {
	f, err := os.OpenFile(r.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	r.mu.Lock()
	old := r.f
	r.f = f
	r.mu.Unlock()
	return old.Close()
}

// openLog sets up the master's log as the config's log section asks; the
// workers' lines go to the same output. Called again (by a reload), it
// moves the log and the workers' lines to the new output.
func (m *Master) openLog(l config.Log) error {
	var w io.Writer
	var file *reopenFile
	switch l.Output {
	case "stdout":
		w = m.Stdout
		if w == nil {
			w = os.Stdout
		}
	case "stderr", "":
		w = m.Stderr
		if w == nil {
			w = os.Stderr
		}
	default:
		f, err := os.OpenFile(l.Output, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
		if err != nil {
			if m.log != nil {
				m.log.Error("cannot open the new log; keeping the old one", "output", l.Output, "error", err, daemon.FixAttr(config.FileFix(err)))
			} else if m.Logger != nil {
				m.Logger.Error("cannot open the log", "output", l.Output, "error", err, daemon.FixAttr(config.FileFix(err)))
			}
			return err
		}
		file = &reopenFile{path: l.Output, f: f}
		w = file
	}
	if m.logw == nil {
		m.logw = &lineWriter{w: w}
	} else {
		m.logw.set(w)
	}
	m.closeLog()
	m.logFile = file
	m.logConfig = l
	opts := &slog.HandlerOptions{Level: l.Level}
	var h slog.Handler = slog.NewTextHandler(m.logw, opts)
	if l.Format == "json" {
		h = slog.NewJSONHandler(m.logw, opts)
	}
	m.log = slog.New(h).With("master", os.Getpid())
	return nil
}

// applyLog sets the master's log up again if a reload changed it.
func (m *Master) applyLog(l config.Log) {
	if l != m.logConfig {
		m.openLog(l) // on failure, logged and the old log kept
	}
}

// closeLog closes the log file, if the log is one.
func (m *Master) closeLog() {
	if m.logFile != nil {
		m.logFile.mu.Lock()
		m.logFile.f.Close()
		m.logFile.mu.Unlock()
	}
}
