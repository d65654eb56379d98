package bench

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"
)

// progress draws a one-line status on a terminal: the step, how many of
// the planned steps are done, and the time the current one has run. On
// anything but a terminal it prints nothing (the log lines suffice).
type progress struct {
	w     io.Writer
	tty   bool
	total int

	mu    sync.Mutex
	done  int
	label string
	since time.Time
	stop  chan struct{}
	width int
}

func newProgress(w io.Writer, total int) *progress {
	p := &progress{w: w, tty: isTerminal(w), total: total, stop: make(chan struct{})}
	if p.tty {
		go p.loop()
	}
	return p
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func (p *progress) loop() {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
			p.draw()
		}
	}
}

// step starts a new step; the previous one counts as done.
func (p *progress) step(label string) {
	p.mu.Lock()
	if p.label != "" {
		p.done++
	}
	p.label, p.since = label, time.Now()
	p.mu.Unlock()
	p.draw()
}

func (p *progress) draw() {
	if !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	const barWidth = 24
	frac := 0.0
	if p.total > 0 {
		frac = min(float64(p.done)/float64(p.total), 1)
	}
	fill := int(frac * barWidth)
	line := fmt.Sprintf("[%s%s] %3.0f%% %s %.0fs", strings.Repeat("#", fill), strings.Repeat(".", barWidth-fill),
		100*frac, p.label, time.Since(p.since).Seconds())
	if len(line) > 110 {
		line = line[:110]
	}
	pad := max(p.width-len(line), 0)
	p.width = len(line)
	fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
}

// logf prints a line above the progress line.
func (p *progress) logf(format string, args ...any) {
	p.mu.Lock()
	if p.tty && p.width > 0 {
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.width = 0
	}
	fmt.Fprintf(p.w, "sluicebench: "+format+"\n", args...)
	p.mu.Unlock()
}

// close erases the progress line.
func (p *progress) close() {
	if p.tty {
		close(p.stop)
		p.mu.Lock()
		fmt.Fprintf(p.w, "\r%s\r", strings.Repeat(" ", p.width))
		p.mu.Unlock()
	}
}
