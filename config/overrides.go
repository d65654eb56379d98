package config

import (
	"fmt"
	"slices"
)

// Overrides are settings given beside a config file that replace the
// file's own, as `sluice serve -c FILE` takes --listen, --workers and
// --pid-file. A nil field leaves the file's setting as it is; the zero
// value changes nothing.
type Overrides struct {
	Listen  *string // one listen address (ParseAddress) in place of the file's list
	Workers *string // worker processes, as ParseWorkers reads them
	PidFile *string // the pid file; "" for none
}

// Apply replaces cfg's settings with o's. A workers override that starts
// worker processes drops the file's warning that health checks have no
// workers to check. On a bad value it closes cfg (its databases and
// logs) and returns an error naming the flag (--listen, --workers), as
// a command line reports it; cfg must then not be used.
func (o Overrides) Apply(cfg *Config) error {
	if o.Listen != nil {
		a, err := ParseAddress(*o.Listen)
		if err != nil {
			cfg.Close()
			return fmt.Errorf("--listen: %w", err)
		}
		cfg.Listen = []Address{a}
	}
	if o.Workers != nil {
		w, err := parseWorkersFlag(*o.Workers)
		if err != nil {
			cfg.Close()
			return err
		}
		cfg.Workers = w
		if w != 0 { // the file's warning, if any, is about the value overridden
			cfg.Warnings = slices.DeleteFunc(cfg.Warnings, func(w *Warning) bool { return w.Msg == HealthWarning })
		}
	}
	if o.PidFile != nil {
		cfg.PidFile = *o.PidFile
	}
	return nil
}
