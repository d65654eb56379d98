// Package kube holds no code: its smoke test (smoke_linux_test.go) checks
// cmd/kubecluster end to end. See README.md for what this module builds
// and how to run it.
package kube
