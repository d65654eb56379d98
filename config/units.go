package config

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"
)

// sizeUnits are the units a size may carry, matched case-insensitively.
var sizeUnits = []struct {
	name string
	mult float64
}{
	{"b", 1},
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12},
}

var errSizeSyntax = errors.New(`want a number of bytes with an optional unit: B, KiB, MiB, GiB, TiB (powers of 1024) or KB, MB, GB, TB (powers of 1000), e.g. "16KiB"`)

// ParseSize parses a size in bytes: a number with an optional unit, as in
// "512", "16KiB", "1.5 MiB", "10MB". Units are case-insensitive; KiB is
// 1024 bytes and KB 1000. A fraction is rounded to the nearest byte.
func ParseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && (t[i] >= '0' && t[i] <= '9' || t[i] == '.' || (i == 0 && (t[i] == '-' || t[i] == '+'))) {
		i++
	}
	num, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	if num == "" {
		return 0, errSizeSyntax
	}
	mult := 1.0
	if unit != "" {
		found := false
		for _, u := range sizeUnits {
			if u.name == unit {
				mult, found = u.mult, true
				break
			}
		}
		if !found {
			return 0, errSizeSyntax
		}
	}
	if unit == "" || unit == "b" {
		if n, err := strconv.ParseInt(num, 10, 64); err == nil {
			return n, nil
		}
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, errSizeSyntax
	}
	v := math.Round(f * mult)
	if v >= math.MaxInt64 || v <= math.MinInt64 {
		return 0, errors.New("size out of range")
	}
	if unit == "" && v != f {
		return 0, errors.New("a size without a unit is a whole number of bytes")
	}
	return int64(v), nil
}

// FormatSize formats n bytes with the largest binary unit that divides it
// exactly: 16384 is "16KiB", 1000 is "1000".
func FormatSize(n int64) string {
	for _, u := range []struct {
		name  string
		shift uint
	}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}} {
		if n != 0 && n%(1<<u.shift) == 0 {
			return strconv.FormatInt(n>>u.shift, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// ParseDuration parses a duration as time.ParseDuration does ("10s",
// "1m30s", "250ms"), and accepts a bare "0". A number without a unit is
// refused, since seconds and milliseconds are both plausible readings.
func ParseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	d, err := time.ParseDuration(t)
	if err != nil {
		if _, nerr := strconv.ParseFloat(t, 64); nerr == nil {
			return 0, errors.New(`a duration needs a unit: ns, us, ms, s, m or h, e.g. "10s"`)
		}
		return 0, errors.New(`want a duration such as "10s", "1m30s" or "250ms"`)
	}
	return d, nil
}

// FormatDuration formats d compactly: "10s", "1m30s", "250ms".
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
