//go:build !linux

package main

import "io"

// runAsPID1 does nothing: only on Linux is sluice its container's init
// (see pid1_linux.go).
func runAsPID1(args []string, stderr io.Writer) (status int, ran bool) { return 0, false }
