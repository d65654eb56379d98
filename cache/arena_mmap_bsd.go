//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package cache

const mapNoReserve = 0

func advise([]byte) {}
