package cache

import (
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/pipe"
)

// tap is one miss: the rest of the pipeline runs on the client's own
// Conn, and the tap, a filter nested beneath the rest's filters (see
// pipe.Conn.NestFilters), decides at commit whether the response is
// stored and, if so, copies what passes into the entry.
type tap struct {
	x        *Cache
	ri       reqInfo
	req      *engine.Request
	pk, ck   string
	e        *entry // the collapse's entry, or nil when not collapsing
	m        *meta
	fwd      string
	reqTime  time.Time
	skip     []field
	next     pipe.Writer
	downErr  error // the client's write failed: storing goes on
	over     bool  // the body outgrew MaxObjectSize: not stored
	sk       string
	ended    bool
	released bool         // release ran
	content  pipe.Content // the rest's, when run stands in for it

	// The tap's methods as the pipeline takes them, made once per tap:
	// taps are reused (tapPool), so a miss allocates none of them.
	filterFn pipe.Filter
	runFn    pipe.Content
	wrapFn   pipe.Wrap
}

// tapPool holds taps whose miss is over: Close has run, after which the
// pipeline calls none of their methods (the content phase calls Close
// once, last, and a filter's Close never closes the writer beneath it:
// see pipe.Wrap). A tap whose Close never runs (its response was not
// storable, or the content panicked) is left to the collector.
var tapPool = sync.Pool{New: func() any {
	t := new(tap)
	t.filterFn, t.runFn, t.wrapFn = t.filter, t.run, t.wrap
	return t
}}

// newTap returns a tap from the pool, its fields those of a new one but
// the skip slice's room and the methods.
func newTap() *tap { return tapPool.Get().(*tap) }

// free puts t back in the pool once Close is done with it.
func (t *tap) free() {
	clear(t.skip)
	skip, filterFn, runFn, wrapFn := t.skip[:0], t.filterFn, t.runFn, t.wrapFn
	*t = tap{skip: skip, filterFn: filterFn, runFn: runFn, wrapFn: wrapFn}
	tapPool.Put(t)
}

// miss runs rest for the request and stores what it produces when it
// may. leader is the collapse entry r leads, or nil.
func (x *Cache) miss(c *pipe.Conn, rest pipe.Component, ri *reqInfo, pk, ck string, leader *entry, fwd string, now time.Time) (ok bool) {
	t := newTap()
	t.x, t.ri, t.req, t.pk, t.ck, t.e, t.fwd, t.reqTime = x, *ri, c.Request, pk, ck, leader, fwd, now
	c.Header().Values(func(name, value string) bool {
		t.skip = append(t.skip, field{name, value})
		return true
	})
	if leader != nil {
		// The fetch is for whoever joins it too: the rest must not give
		// up on it because this client leaves.
		c.DetachGone()
		defer func() {
			if v := recover(); v != nil {
				t.fail()
				panic(v)
			}
		}()
	}
	mark := c.FilterMark()
	ok = rest.Handle(c)
	if c.Finished() {
		// The rest answered inside its own call (net/http middleware
		// after the cache): nothing of it passed the cache.
		t.fail()
		return ok
	}
	c.NestFilters(mark, t.filterFn)
	if leader != nil {
		// A content that panics must still release whoever joined the
		// fetch, or the key would hang with its entry in flight.
		t.content = c.Content()
		if t.content != nil {
			c.SetContent(t.runFn)
		}
	}
	return ok
}

// run is the rest's content, for a collapse leader: a panic in it
// breaks the entry off (its readers stop, the key leaves the in-flight
// map) before it goes on up.
func (t *tap) run(w pipe.Writer) error {
	defer func() {
		if v := recover(); v != nil {
			t.fail()
			panic(v)
		}
	}()
	return t.content(w)
}

// filter runs at commit, with the response's final status and header.
func (t *tap) filter(c *pipe.Conn) pipe.Wrap {
	x := t.x
	h := c.Header()
	status := c.Status()
	now := x.now()
	m, why := x.newMeta(status, h, &t.ri, t.skip, t.reqTime, now)
	if m == nil {
		if t.e != nil {
			t.e.abandon()
			t.release()
			switch why {
			case whyAuth, whyCookie, whyReqNoStore, whyMethod:
			default:
				x.markPass(t.pk)
			}
		}
		var buf [128]byte
		b := x.appendForwarded(buf[:0], t.fwd, status)
		b = append(b, "; detail="...)
		b = append(b, why...)
		h.Add("Cache-Status", x.missStatus.intern(b))
		return nil
	}
	if m.vary != nil {
		t.sk = secondaryKey(t.req, m.vary)
	}
	if t.e == nil {
		t.e = newEntry()
	}
	t.e.sk = t.sk
	t.m = m
	x.attachDisk(c, t.e, t.pk, m, t.sk)
	t.e.publish(m, x.maxObject, x.arena)
	if h.Get("Date") == "" {
		h.Set("Date", m.get("Date"))
	}
	age := max(0, int64(m.currentAge(now)/time.Second))
	h.Set("Age", strconv.FormatInt(age, 10))
	var buf [128]byte
	b := x.appendForwarded(buf[:0], t.fwd, status)
	b = append(b, storedParam(m)...)
	b = append(b, "; ttl="...)
	b = strconv.AppendInt(b, int64(m.lifetime/time.Second)-age, 10)
	h.Add("Cache-Status", x.missStatus.intern(b))
	return t.wrapFn
}

func (t *tap) wrap(next pipe.Writer) pipe.Writer {
	t.next = next
	return t
}

// Write stores p and sends it on. When the client's connection fails
// the error is swallowed while the body is still worth storing (it fits,
// or collapsed clients read it), so that one client's leaving does not
// abort a store others wait on.
func (t *tap) Write(p []byte) (int, error) {
	if !t.over {
		n, _ := t.e.body.state()
		if n+int64(len(p)) > t.x.maxObject {
			t.over = true
			if t.x.leave(t.e) == 0 {
				// Nobody reads along: stop keeping the bytes.
				t.e.body.finish(true)
			} else {
				// Readers along get the rest, from a bounded window.
				t.e.body.bound(t.x.maxObject)
			}
		}
	}
	if !t.over || !t.bodyDropped() {
		t.e.body.append(p)
	}
	if t.downErr != nil {
		return len(p), t.keepGoing()
	}
	n, err := t.next.Write(p)
	if err != nil {
		t.downErr = err
		return len(p), t.keepGoing()
	}
	return n, nil
}

func (t *tap) bodyDropped() bool {
	t.e.body.mu.Lock()
	defer t.e.body.mu.Unlock()
	return t.e.body.failed
}

// keepGoing returns nil while the fetch is worth finishing for the store
// or for collapsed readers, else the client's error.
func (t *tap) keepGoing() error {
	if !t.over || t.x.readersOf(t.e) > 0 {
		return nil
	}
	return t.downErr
}

// Flush implements pipe.Writer.
func (t *tap) Flush() error {
	if t.downErr != nil {
		return t.keepGoing()
	}
	if err := t.next.Flush(); err != nil {
		t.downErr = err
		return t.keepGoing()
	}
	return nil
}

// Abort implements pipe.Aborter: the content broke off, nothing is
// stored and readers along are cut off too.
func (t *tap) Abort(error) { t.fail() }

func (t *tap) fail() {
	if t.ended || t.e == nil {
		return
	}
	t.ended = true
	t.x.leave(t.e)
	if t.e.isReady.Load() {
		if t.e.body != nil {
			t.e.body.finish(true)
		}
	} else {
		t.e.abandon()
	}
	t.release()
}

// release ends the fetch's part in its entry, once: the entry leaves the
// in-flight map (no reader joins from then on) and the fetch lets go of
// its hold on the body, which the store (if it took it) and the readers
// keep as long as they need it.
func (t *tap) release() {
	if t.released || t.e == nil {
		return
	}
	t.released = true
	t.x.leave(t.e)
	if t.e.body != nil {
		t.e.body.unref()
	}
}

// Close completes the body and stores it. It is the last of the tap's
// methods the pipeline calls: the tap goes back to the pool.
func (t *tap) Close() error {
	if !t.ended {
		t.ended = true
		t.store()
	}
	err := t.downErr
	t.free()
	return err
}

// store completes the body, stores the response when it is whole, and
// releases the fetch.
func (t *tap) store() {
	defer t.release()
	x, e, m := t.x, t.e, t.m
	n, _ := e.body.state()
	if m.length >= 0 && n != m.length && !t.over {
		// Fewer bytes than Content-Length: not a whole response.
		x.leave(e)
		e.body.finish(true)
		return
	}
	e.body.finish(false)
	if !t.over && x.insert(t.pk, t.req, e, m, t.sk) {
		atomic.AddUint64(&x.stats.Stored, 1)
	}
}

// appendForwarded appends the start of a forwarded response's
// Cache-Status (RFC 9211): the cache's name, why the request went on
// (fwd) and the status the rest answered.
func (x *Cache) appendForwarded(b []byte, fwd string, status int) []byte {
	b = append(b, x.name...)
	b = append(b, "; fwd="...)
	b = append(b, fwd...)
	b = append(b, "; fwd-status="...)
	return strconv.AppendInt(b, int64(status), 10)
}
