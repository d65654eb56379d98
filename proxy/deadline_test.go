package proxy

import (
	"testing"
	"time"

	"github.com/sluice-server/sluice/upstream"
)

// deadlineConn records the read deadlines set on it.
type deadlineConn struct {
	nopConn
	set []time.Time
}

func (*deadlineConn) Read([]byte) (int, error) { return 0, nil }

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	c.set = append(c.set, t)
	return nil
}

// TestArmReadKeepsADeadlineWithinSlack drives armRead as a busy
// connection does, a request every millisecond for three seconds: the
// deadline is moved about once a slack, not once a request, and the one
// in force is never earlier than the timeout asked for nor later than it
// by more than the slack.
func TestArmReadKeepsADeadlineWithinSlack(t *testing.T) {
	for _, timeout := range []time.Duration{60 * time.Second, 800 * time.Millisecond} {
		nc := &deadlineConn{}
		uc := &upConn{nc: nc}
		slack := deadlineSlack(timeout)
		start := upstream.Instant(1_000_000 * time.Second)
		const requests = 3000
		for i := range requests {
			now := start.Add(time.Duration(i) * time.Millisecond)
			uc.armRead(now, timeout)
			if len(nc.set) == 0 {
				t.Fatalf("timeout %v: no deadline set", timeout)
			}
			d := upstream.InstantOf(nc.set[len(nc.set)-1])
			if due := now.Add(timeout); d < due || d.Sub(due) > slack {
				t.Fatalf("timeout %v, request %d: deadline %v after its send, want %v to %v", timeout, i, d.Sub(now), timeout, timeout+slack)
			}
		}
		span := time.Duration(requests) * time.Millisecond
		if max := int(span/slack) + 1; len(nc.set) > max {
			t.Errorf("timeout %v: %d deadlines set for %d requests over %v, want at most %d (one a slack of %v)", timeout, len(nc.set), requests, span, max, slack)
		}
	}
}

// TestArmReadAfterCleared: a deadline cleared (the body read without
// one) or expired is set again at once.
func TestArmReadAfterCleared(t *testing.T) {
	nc := &deadlineConn{}
	uc := &upConn{nc: nc}
	now := upstream.Instant(1_000_000 * time.Second)
	uc.armRead(now, time.Minute)
	uc.readDeadline = 0 // as startBody clears it
	uc.armRead(now.Add(time.Millisecond), time.Minute)
	if len(nc.set) != 2 {
		t.Fatalf("%d deadlines set, want 2: a cleared deadline must be set again", len(nc.set))
	}
	later := now.Add(2 * time.Minute) // the one set has passed
	uc.armRead(later, time.Minute)
	if len(nc.set) != 3 || upstream.InstantOf(nc.set[2]) < later.Add(time.Minute) {
		t.Fatalf("deadlines %v: an expired deadline must be replaced by one a minute after %v", nc.set, later)
	}
}
