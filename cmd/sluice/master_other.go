//go:build !linux

package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// runMaster reports that worker processes need Linux.
func (f *serveFlags) runMaster(stdout, stderr io.Writer, log *slog.Logger, _ *daemon.Activation, _ *admin.State) int {
	fmt.Fprintln(stderr, "sluice serve:", supervisor.ErrUnsupported)
	return exitError
}
