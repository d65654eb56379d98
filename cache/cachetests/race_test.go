//go:build race

package cachetests

const raceEnabled = true
