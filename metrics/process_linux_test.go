package metrics

import "testing"

// A line of /proc/PID/stat as Linux 6 writes it, whose command name
// holds a space and parentheses.
const statLine = "4242 (sluice (w) 1) S 1 4242 4242 0 -1 4194560 12345 0 0 0 250 75 0 0 20 0 9 0 123456 1691590656 6237 18446744073709551615 1 1 0 0 0 0 0 0 2143420159 0 0 0 17 1 0 0 0 0 0 0 0 0 0 0 0 0 0\n"

func TestParseStat(t *testing.T) {
	unset := Process{CPUSecs: -1, Resident: -1, Virtual: -1, Threads: -1}
	for _, tt := range []struct {
		line string
		want Process
	}{
		{statLine, Process{CPUSecs: 3.25, Resident: 6237 * 4096, Virtual: 1691590656, Threads: 9}},
		{"", unset},
		{"4242 (no closing paren S 1 2 3", unset},
		{"4242 (short) S 1 2 3\n", unset},
		{"4242 (x) S 1 4242 4242 0 -1 4194560 12345 0 0 0 -250 75 0 0 20 0 9 0 123456 1691590656 6237", unset}, // a negative time
		{"4242 (x) S 1 4242 4242 0 -1 4194560 12345 0 0 0 abc 75 0 0 20 0 9 0 123456 1691590656 6237", unset},
		{"4242 (x) S 1 4242 4242 0 -1 4194560 12345 0 0 0 250 75 0 0 20 0 9 0 123456 1691590656 9223372036854775807", unset}, // rss overflows in bytes
	} {
		p := unset
		parseStat(&p, []byte(tt.line), 4096)
		if p != tt.want {
			t.Errorf("parseStat(%q) = %+v, want %+v", tt.line, p, tt.want)
		}
	}
}

// The process's own figures are sane: some CPU time, memory, a few
// descriptors under the limit.
func TestReadProcess(t *testing.T) {
	p := readProcess()
	if p.CPUSecs < 0 || p.Resident < 1<<20 || p.Virtual < p.Resident || p.Threads < 1 || p.OpenFDs < 3 || p.MaxFDs < p.OpenFDs {
		t.Errorf("readProcess() = %+v", p)
	}
}

// Whatever the line, parseStat does not panic, and what it sets is
// never negative.
func FuzzParseStat(f *testing.F) {
	f.Add([]byte(statLine))
	f.Add([]byte("1 ()) R"))
	f.Add([]byte(")"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p := Process{CPUSecs: -1, Resident: -1, Virtual: -1, Threads: -1}
		parseStat(&p, b, 4096)
		set := p.CPUSecs >= 0
		if set && (p.Resident < 0 || p.Virtual < 0 || p.Threads < 0) || !set && (p.Resident != -1 || p.Virtual != -1 || p.Threads != -1) {
			t.Errorf("parseStat(%q) = %+v", b, p)
		}
	})
}
