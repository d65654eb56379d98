//go:build linux

package supervisor

import (
	"encoding/json"
	"net"
	"slices"
	"time"

	"github.com/sluice-server/sluice/metrics"
)

// Each worker counts its own requests (package metrics). A scrape
// reaches the one worker whose connection carried it, which asks the
// master for the others' (msgScrape): the master asks every other
// worker, current, starting or draining, passes each answer on to the
// first worker as it comes (msgScraped with Metrics, one packet each),
// and ends with a msgScraped without Metrics once all have answered or
// scrapeTimeout is over. The first worker then writes every worker's
// series, each labelled worker="ID".

// scrapeTimeout bounds how long the master waits for the workers'
// metrics, and workerScrapeWait how long a worker waits for the master.
const (
	scrapeTimeout    = 2 * time.Second
	workerScrapeWait = scrapeTimeout + time.Second
)

// scrapeClient is a worker's side of the relay (components.Context
// Metrics). Safe for concurrent use.
type scrapeClient struct {
	ctl  *net.UnixConn
	self int
	waiters
}

func newScrapeClient(ctl *net.UnixConn, self int) *scrapeClient {
	return &scrapeClient{ctl: ctl, self: self}
}

// ownSnapshot is this worker's metrics, labelled with its id.
func ownSnapshot(self int) metrics.Snapshot {
	s := metrics.Take(metrics.Default)
	s.Worker = self
	return s
}

// collect returns every worker's metrics, this one's first, then by
// worker id. A worker that does not answer in time is left out; if the
// master does not answer, this worker's alone are returned.
func (c *scrapeClient) collect() []metrics.Snapshot {
	snaps := []metrics.Snapshot{ownSnapshot(c.self)}
	ch := make(chan message, 64) // more answers than it holds are left out (see waiters.answer)
	id, remove := c.add(ch)
	defer remove()
	if err := send(c.ctl, message{Type: msgScrape, ID: id}, nil, time.Second); err != nil {
		return snaps
	}
	timer := time.NewTimer(workerScrapeWait)
	defer timer.Stop()
	for {
		select {
		case m := <-ch:
			if m.Metrics == nil {
				slices.SortFunc(snaps[1:], func(a, b metrics.Snapshot) int { return a.Worker - b.Worker })
				return snaps
			}
			var s metrics.Snapshot
			if json.Unmarshal(m.Metrics, &s) == nil && s.Worker != 0 && s.Worker != c.self {
				snaps = append(snaps, s)
			}
		case <-timer.C:
			return snaps
		}
	}
}

// answerScrape answers the master's msgScrape with this worker's
// metrics (see fitSnapshot).
func answerScrape(ctl *net.UnixConn, self int, id uint64) {
	if b, err := fitSnapshot(ownSnapshot(self), maxMessage-1024); err == nil {
		send(ctl, message{Type: msgScraped, ID: id, Metrics: b}, nil, time.Second)
	}
}

// fitSnapshot returns s as JSON of at most limit bytes: should it not
// fit, the sets' gauges are left out, then the upstreams' counters, then
// the routes'.
func fitSnapshot(s metrics.Snapshot, limit int) ([]byte, error) {
	b, err := json.Marshal(s)
	for _, drop := range []func(){
		func() { s.Sets = nil },
		func() { s.Upstreams = nil },
		func() { s.Routes = nil },
	} {
		if err != nil || len(b) <= limit {
			break
		}
		drop()
		b, err = json.Marshal(s)
	}
	return b, err
}

// relayScrape asks the workers other than w for their metrics and passes
// their answers on to w. It runs on Run's goroutine; the waiting does
// not.
func (m *Master) relayScrape(w *worker, msg message) {
	targets := m.others(w)
	go func() {
		m.scrapes.fanOut(targets, message{Type: msgScrape}, scrapeTimeout, nil, func(a relayReply) {
			if !a.gone && a.m.Metrics != nil {
				send(w.ctl, message{Type: msgScraped, ID: msg.ID, Metrics: a.m.Metrics}, nil, time.Second)
			}
		})
		send(w.ctl, message{Type: msgScraped, ID: msg.ID}, nil, time.Second)
	}()
}
