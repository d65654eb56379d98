//go:build !linux

package supervisor

import (
	"errors"
	"fmt"
	"io"
)

// WorkerCommand is the argument with which a master starts its own
// binary as a worker.
const WorkerCommand = "worker"

// ErrUnsupported is what a master cannot do here: worker processes need
// Linux (the listening sockets handed over as they are, the parent-death
// signal). A single process (workers: 0) serves on every platform.
var ErrUnsupported = errors.New("worker processes need Linux; serve with workers: 0")

// RunWorker reports ErrUnsupported and returns exit status 1.
func RunWorker(stdout, stderr io.Writer) int {
	fmt.Fprintln(stderr, "sluice worker:", ErrUnsupported)
	return 1
}

// Upgrading reports false: there is no binary upgrade without workers.
func Upgrading() bool { return false }
