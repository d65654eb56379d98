//go:build !linux

package engine

func defaultMaxConns() int { return DefaultMaxConns }
