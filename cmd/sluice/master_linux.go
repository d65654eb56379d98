package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// runMaster runs a master and its worker processes (package
// daemon/supervisor) until SIGINT or SIGTERM.
func (f *serveFlags) runMaster(stdout, stderr io.Writer, log *slog.Logger, act *daemon.Activation) int {
	m := &supervisor.Master{Grace: f.grace, Stdout: stdout, Stderr: stderr, Logger: log}
	if daemon.UnderInit() {
		m.NoUpgrade = "this master runs under sluice as PID 1, which would end with it; replace the container instead"
	}
	if act != nil {
		m.Listen = act.Listen
	}
	name := flagsSource
	if f.file != "" {
		name = f.file
		m.Read = func() (string, []byte, error) {
			data, err := os.ReadFile(f.file)
			return f.file, data, err
		}
		m.Prepare = func(cfg *config.Config) error { return f.prepare(cfg, act, log) }
	} else {
		m.Read = func() (string, []byte, error) {
			data, err := f.configYAML()
			return flagsSource, data, err
		}
		m.Prepare = func(cfg *config.Config) error {
			warnUnmatched(cfg, act)
			return checkRoot(cfg, flagsSource, false, log)
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
