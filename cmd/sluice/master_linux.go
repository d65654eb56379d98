package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// runMaster runs a master and its worker processes (package
// daemon/supervisor) until SIGINT or SIGTERM.
func (f *serveFlags) runMaster(stdout, stderr io.Writer, log *slog.Logger) int {
	m := &supervisor.Master{Grace: f.grace, Stdout: stdout, Stderr: stderr, Logger: log}
	name := flagsSource
	if f.file != "" {
		name = f.file
		m.Read = func() (string, []byte, error) {
			data, err := os.ReadFile(f.file)
			return f.file, data, err
		}
		m.Prepare = f.override
	} else {
		m.Read = func() (string, []byte, error) {
			data, err := f.configYAML()
			return flagsSource, data, err
		}
	}
	ctx, stop := supervisor.HandleSignals(context.Background(), m)
	defer stop()
	err := m.Run(ctx)
	if err != nil && !errors.As(err, new(*daemon.LoadError)) {
		fmt.Fprintln(stderr, "sluice serve:", err)
	}
	return exitStatus(err, name, log, stderr)
}
