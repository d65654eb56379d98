package main_test

// A real browser for the tests: headless Chromium (Debian's chromium),
// driven over the DevTools protocol by chromedp. The browser only serves
// tests: chromedp is a dependency of this test package, never of the
// sluice binary (TestNoBrowserDependencies).

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/sluice-server/sluice/sluicetest"
)

const (
	// viewportWidth and viewportHeight are the browser's window; a
	// screenshot is the full page at that width.
	viewportWidth, viewportHeight = 1280, 800
	// pageTimeout bounds one page's navigation, checks and screenshot:
	// a page that does not load within it fails, the test goes on.
	pageTimeout = 20 * time.Second
	// maxShotHeight bounds a screenshot's height: the top of a very long
	// page shows it, and a full 80 KB page takes seconds to capture.
	maxShotHeight = 4 * viewportHeight
	// settleTimeout bounds how long a loaded page may keep requests in
	// flight (a script's fetch) before it is checked as it is.
	settleTimeout = 3 * time.Second
)

// newBrowser starts headless Chromium for the test and returns the
// context that drives it. The browser and every process it started are
// gone when the test ends, also when it fails: the cleanup kills them and
// fails the test if any is left.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := sluicetest.NeedTool(t, "chromium", "chromium")
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path),
		chromedp.UserDataDir(profile),
		// Chromium leaves its singleton's socket in a directory of
		// TMPDIR's (org.chromium.Chromium.*) when it is killed: the
		// test's own, removed with it.
		chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.WindowSize(viewportWidth, viewportHeight),
		// Scrollbars would change the screenshots with the page's height.
		chromedp.Flag("hide-scrollbars", true),
	)
	if os.Geteuid() == 0 {
		// Chromium refuses to run as root with its sandbox on (the
		// sandbox needs an unprivileged user). The tests run as root in
		// CI's containers and only load pages of their own servers on
		// loopback, so the sandbox protects nothing there.
		opts = append(opts, chromedp.NoSandbox)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(t.Logf))
	var browserPid int
	t.Cleanup(func() {
		// The browser's processes, listed before it goes: once killed,
		// its children would be orphans no tree leads to.
		procs := processesUsing(profile, browserPid)
		cancel()
		cancelAlloc() // kills the browser and waits for it
		sluicetest.WaitFor(t, "chromium's processes to exit", func() bool {
			for _, pid := range procs {
				if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); err == nil {
					return false
				}
			}
			return len(processesUsing(profile, 0)) == 0
		})
	})
	start, cancelStart := context.WithTimeout(ctx, 30*time.Second)
	defer cancelStart()
	// The first action starts the browser; its context must outlive the
	// test's pages, so the timeout only bounds the wait for it.
	if err := startBrowser(start, ctx); err != nil {
		t.Fatalf("starting chromium: %v", err)
	}
	if p := chromedp.FromContext(ctx).Browser.Process(); p != nil {
		browserPid = p.Pid
	}
	if len(processesUsing(profile, browserPid)) == 0 {
		t.Fatalf("no process of chromium found: the check that they exit would check nothing")
	}
	return ctx
}

// startBrowser starts the browser of ctx, giving up when wait ends.
func startBrowser(wait, ctx context.Context) error {
	done := make(chan error, 1)
	go func() { done <- chromedp.Do(ctx) }()
	select {
	case err := <-done:
		return err
	case <-wait.Done():
		return wait.Err()
	}
}

// processesUsing returns the pids of the processes whose command line
// names dir (the browser started with dir as its profile, and those of
// its children that are told it), and of the descendants of pid when it
// is not 0.
func processesUsing(dir string, pid int) []int {
	entries, _ := os.ReadDir("/proc")
	parent := map[int]int{}
	var pids []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(cmdline), dir) {
			pids = append(pids, p)
		}
		// /proc/PID/stat is "pid (comm) state ppid ...", comm may hold
		// spaces and parentheses: the fields follow the last ")".
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if i := strings.LastIndexByte(string(stat), ')'); err == nil && i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 {
				parent[p], _ = strconv.Atoi(f[1])
			}
		}
	}
	if pid == 0 {
		return pids
	}
	for p := range parent {
		for a := p; a > 1; a = parent[a] {
			if a == pid {
				pids = append(pids, p)
				break
			}
		}
	}
	slices.Sort(pids)
	return slices.Compact(pids)
}

// credentials are a user name and password for HTTP basic authentication.
type credentials struct{ user, password string }

// A crawl visits the pages of one site in the browser.
type crawl struct {
	// browser is the context of newBrowser; each page gets a tab of it.
	browser context.Context
	// maxPages bounds the pages visited: more is an error.
	maxPages int
	// perShape bounds the pages visited of one shape (pathShape): of
	// /article/1 to /article/10000, only the first few are.
	perShape int
	// credentials returns the credentials for a page that asks for them,
	// or false to skip it.
	credentials func() (credentials, bool)
	// screenshots is the folder the pages' screenshots go to.
	screenshots string
	// favicon says every page must have an icon: its link rel="icon",
	// or else /favicon.ico, loads.
	favicon bool
}

// A pageResult is what the browser saw of one page.
type pageResult struct {
	url      string
	final    string   // the URL the page was loaded from, after redirects
	status   int      // the navigation's HTTP status
	problems []string // what is wrong with the page; none for a good page
	links    []string // the absolute URLs of its a[href] links
	// expect maps a link's URL to the status its data-expect-status
	// attribute says it answers on purpose (an error page on show).
	expect   map[string]int
	encoded  []string // the subresources (and document) decoded from a Content-Encoding
	authed   bool     // whether it was visited with credentials
	download bool     // whether the browser downloaded it instead of showing it
	shot     string   // the screenshot's file
}

// run visits start and every same-origin page its links lead to,
// breadth first, up to maxPages, and returns what it saw of each in the
// order visited.
func (c *crawl) run(t *testing.T, start string) []*pageResult {
	t.Helper()
	origin, err := url.Parse(start)
	if err != nil {
		t.Fatal(err)
	}
	queue := []string{start}
	seen := map[string]bool{start: true} // queued
	visited := map[string]bool{}         // loaded, by the URL after redirects
	expect := map[string]int{}
	shapes := map[string]int{} // pages queued by pathShape
	var results []*pageResult
	for len(queue) > 0 {
		u := queue[0]
		queue = queue[1:]
		if visited[u] {
			continue // a redirect led there already
		}
		if len(results) == c.maxPages {
			t.Errorf("more than %d pages; %s and %d more not visited", c.maxPages, u, len(queue))
			break
		}
		r := c.visit(t, u, expect[u])
		if r == nil {
			continue
		}
		if r.final != "" && r.final != u {
			if visited[r.final] {
				t.Logf("%s: redirected to %s, visited already", u, r.final)
				continue
			}
			visited[r.final] = true
		}
		visited[u] = true
		results = append(results, r)
		for _, l := range r.links {
			lu, err := url.Parse(l)
			if err != nil || lu.Scheme != origin.Scheme || lu.Host != origin.Host {
				continue // another site, a mailto:, javascript:...
			}
			lu.Fragment = ""
			l = lu.String()
			if want, ok := r.expect[l]; ok {
				expect[l] = want
			}
			if seen[l] {
				continue
			}
			seen[l] = true
			shape := pathShape(lu.Path)
			if c.perShape > 0 && shapes[shape] == c.perShape {
				t.Logf("%s: not visited, %d pages of its shape %s are", l, c.perShape, shape)
				continue
			}
			shapes[shape]++
			queue = append(queue, l)
		}
	}
	return results
}

// visit checks the page at u, expecting the status want (0 for any 2xx).
// A page that answers 401 is visited again with the crawl's credentials,
// or skipped (nil) when there are none.
func (c *crawl) visit(t *testing.T, u string, want int) *pageResult {
	t.Helper()
	r := c.check(u, nil, want)
	if r.status == 401 && want != 401 {
		creds, ok := credentials{}, false
		if c.credentials != nil {
			creds, ok = c.credentials()
		}
		if !ok {
			t.Logf("%s: 401 and no credentials to log in with: skipped", u)
			return nil
		}
		r = c.check(u, &creds, want)
		r.authed = true
	}
	return r
}

// check loads u in a new tab of the browser, as a visitor would, with
// basic authentication when creds is not nil, and reports what is wrong:
// a navigation status other than want (any 2xx when want is 0), a
// console error or warning, an uncaught exception, a subresource that
// failed to load or answered 4xx/5xx (a body that does not decode from
// its Content-Encoding fails to load), a stylesheet that did not apply,
// an image that did not decode. Everything is bounded by pageTimeout.
// With c.favicon, the page's icon must load (the browser's own request
// for it comes whenever it likes, so it is not counted). With
// c.screenshots, a screenshot of the page is saved there, named by
// screenshotName after the URL the page was loaded from.
func (c *crawl) check(u string, creds *credentials, want int) *pageResult {
	r := &pageResult{url: u}
	tab, closeTab := chromedp.NewContext(c.browser)
	defer closeTab()
	// The first action opens the tab, bound to the context it runs with;
	// the page's timeout only bounds the wait for it.
	ctx, cancel := context.WithTimeout(tab, pageTimeout)
	defer cancel()
	if err := startBrowser(ctx, tab); err != nil {
		r.problems = append(r.problems, "opening a tab: "+err.Error())
		return r
	}
	ev := &pageEvents{requests: map[network.RequestID]*request{}}
	if err := chromedp.Listen(tab, ev.handle); err != nil {
		r.problems = append(r.problems, "listening: "+err.Error())
		return r
	}
	setup := []chromedp.Action[chromedp.Void]{
		chromedp.EmulateViewport(viewportWidth, viewportHeight),
	}
	if creds != nil {
		auth := base64.StdEncoding.EncodeToString([]byte(creds.user + ":" + creds.password))
		setup = append(setup, chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := cdp.Call(ctx, t, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{
				Headers: network.Headers{"Authorization": "Basic " + auth},
			})
			return err
		}))
	}
	if err := chromedp.Do(ctx, setup...); err != nil {
		r.problems = append(r.problems, "setting up the tab: "+err.Error())
		return r
	}
	resp, err := chromedp.Run(ctx, chromedp.NavigateResponse(u))
	switch {
	case err != nil && strings.Contains(err.Error(), "ERR_INVALID_AUTH_CREDENTIALS"):
		// A headless browser has no one to ask for a password: it ends
		// the navigation of a 401 with this error.
		r.status = 401
		r.problems = append(r.problems, "status 401: asks for credentials")
		return r
	case err != nil && strings.Contains(err.Error(), "ERR_ABORTED"):
		// A response the browser does not show (text/csv, an
		// attachment) is downloaded instead, which aborts the
		// navigation: its status still counts, there is no page.
		if doc := ev.document(u); doc != nil && doc.status != 0 {
			r.status, r.download = int(doc.status), true
			if r.status < 200 || r.status > 299 {
				r.problems = append(r.problems, fmt.Sprintf("status %d, want 2xx (a download)", r.status))
			}
			return r
		}
		r.problems = append(r.problems, "loading: "+err.Error())
		return r
	case err != nil:
		r.problems = append(r.problems, "loading: "+err.Error())
		return r
	case resp != nil:
		r.status = int(resp.Status)
		r.final = resp.URL
	}
	switch {
	case want != 0 && r.status != want:
		r.problems = append(r.problems, fmt.Sprintf("status %d, want %d (data-expect-status)", r.status, want))
	case want == 0 && (r.status < 200 || r.status > 299):
		r.problems = append(r.problems, fmt.Sprintf("status %d, want 2xx", r.status))
	}

	// A script may still fetch after the load event: give it a bounded
	// moment to finish, then take the page as it is.
	deadline := time.Now().Add(settleTimeout)
	for ev.inFlight() > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}

	rendered, err := chromedp.Run(ctx, chromedp.Evaluate[renderCheck](
		fmt.Sprintf("(%s)(%v)", renderCheckJS, c.favicon), chromedp.EvalAwaitPromise))
	if err != nil {
		r.problems = append(r.problems, "checking the rendering: "+err.Error())
	} else {
		r.problems = append(r.problems, rendered.Problems...)
		r.links = rendered.Links
		r.expect = map[string]int{}
		for _, l := range rendered.Expect {
			r.expect[l.URL] = l.Status
		}
	}
	r.problems = append(r.problems, ev.problems(u, r.final)...)
	r.encoded = ev.encoded()
	// Only HTML pages are pictured: a stylesheet, an icon or a plain text
	// file shown by the browser says nothing a reader needs to see.
	contentType, _ := chromedp.Run(ctx, chromedp.Evaluate[string]("document.contentType"))
	if c.screenshots != "" && contentType == "text/html" {
		shot := filepath.Join(c.screenshots, "index.jpg")
		if fu, err := url.Parse(r.final); err == nil {
			shot = filepath.Join(c.screenshots, screenshotName(fu.Path, fu.RawQuery))
		}
		png, err := chromedp.Run(ctx, screenshot)
		if err == nil {
			err = os.WriteFile(shot, png, 0o644)
		}
		if err != nil {
			r.problems = append(r.problems, "screenshot: "+err.Error())
		} else {
			r.shot = shot
		}
	}
	return r
}

// shotQuality is the JPEG quality of the screenshots: text stays sharp
// at a quarter of a PNG's size.
var shotQuality int64 = 80

// screenshot is a JPEG of the page at the viewport's width and its full
// height, up to maxShotHeight.
func screenshot(ctx context.Context, t *chromedp.Target) ([]byte, error) {
	m, err := cdp.Call(ctx, t, page.GetLayoutMetrics, cdp.Empty{})
	if err != nil {
		return nil, err
	}
	height := float64(viewportHeight)
	if m.CSSContentSize != nil {
		height = max(min(m.CSSContentSize.Height, maxShotHeight), 1)
	}
	beyond := true
	r, err := cdp.Call(ctx, t, page.CaptureScreenshot, page.CaptureScreenshotParams{
		Format:                page.CaptureScreenshotFormatJpeg,
		Quality:               &shotQuality,
		CaptureBeyondViewport: &beyond,
		FromSurface:           &beyond,
		Clip:                  &page.Viewport{Width: viewportWidth, Height: height, Scale: 1},
	})
	return r.Data, err
}

// renderCheck is what renderCheckJS returns.
type renderCheck struct {
	Problems []string `json:"problems"`
	Links    []string `json:"links"`
	Expect   []struct {
		URL    string `json:"url"`
		Status int    `json:"status"`
	} `json:"expect"`
}

// renderCheckJS is a function run in the loaded page: every stylesheet
// applied (it has rules: a body that did not decode has none), every
// image decoded, the icon loads when its argument is true (an HTML page's
// only), and the page's links.
const renderCheckJS = `async (favicon) => {
	const problems = [];
	for (const l of document.querySelectorAll('link[rel~="stylesheet"]')) {
		let rules = -1;
		try { rules = l.sheet ? l.sheet.cssRules.length : -1; } catch (e) {}
		if (rules <= 0) problems.push('stylesheet ' + l.href + ' did not apply');
	}
	for (const img of document.images) {
		if (!img.complete || img.naturalWidth === 0) problems.push('image ' + (img.currentSrc || img.src) + ' did not decode');
	}
	if (favicon && document.contentType === 'text/html') {
		const icon = document.querySelector('link[rel~="icon"]');
		const href = icon ? icon.href : new URL('/favicon.ico', location.href).href;
		try {
			const resp = await fetch(href);
			await resp.arrayBuffer();
			if (!resp.ok) problems.push('favicon ' + href + ': status ' + resp.status);
		} catch (e) {
			problems.push('favicon ' + href + ': ' + e);
		}
	}
	const links = [...document.querySelectorAll('a[href]')].map(a => a.href);
	const expect = [...document.querySelectorAll('a[href][data-expect-status]')]
		.map(a => ({url: a.href.split('#')[0], status: parseInt(a.dataset.expectStatus, 10)}));
	return {problems, links, expect};
}`

// pageEvents collects the DevTools events of one tab. handle runs on
// chromedp's event loop; the other methods on the test's goroutine.
type pageEvents struct {
	mu       sync.Mutex
	console  []string
	logs     []logEntry
	requests map[network.RequestID]*request
	order    []network.RequestID
}

// A logEntry is an error or warning the browser logged.
type logEntry struct {
	source, url, text string
}

// A request is one the page made, as the network events tell it.
type request struct {
	url      string
	document bool
	// own marks the browser's own requests (type Other: the page's
	// icon, /favicon.ico), which finish whenever the browser likes.
	own      bool
	status   int64
	encoding string // the response's Content-Encoding
	finished bool
	failed   string // the loading failure's error text
}

func (e *pageEvents) handle(ev any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
			var args []string
			for _, a := range ev.Args {
				if a.Value != nil {
					args = append(args, string(a.Value))
				} else {
					args = append(args, a.Description)
				}
			}
			e.console = append(e.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
		}
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		text := d.Text
		if d.Exception != nil && d.Exception.Description != "" {
			text += " " + d.Exception.Description
		}
		e.console = append(e.console, fmt.Sprintf("uncaught exception at %s:%d: %s", d.URL, d.LineNumber+1, text))
	case *cdplog.EventEntryAdded:
		if l := ev.Entry.Level; l == cdplog.EntryLevelError || l == cdplog.EntryLevelWarning {
			e.logs = append(e.logs, logEntry{
				source: string(ev.Entry.Source),
				url:    ev.Entry.URL,
				text:   fmt.Sprintf("console %s (%s): %s %s", l, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL),
			})
		}
	case *network.EventRequestWillBeSent:
		if _, ok := e.requests[ev.RequestID]; !ok {
			e.order = append(e.order, ev.RequestID)
		}
		// A redirect reuses the request's id: the last URL counts.
		e.requests[ev.RequestID] = &request{
			url:      ev.Request.URL,
			document: ev.Type == network.ResourceTypeDocument,
			own:      ev.Type == network.ResourceTypeOther,
		}
	case *network.EventResponseReceived:
		if r := e.requests[ev.RequestID]; r != nil {
			r.status = ev.Response.Status
			for name, v := range ev.Response.Headers {
				if strings.EqualFold(name, "Content-Encoding") {
					r.encoding = fmt.Sprint(v)
				}
			}
		}
	case *network.EventLoadingFinished:
		if r := e.requests[ev.RequestID]; r != nil {
			r.finished = true
		}
	case *network.EventLoadingFailed:
		if r := e.requests[ev.RequestID]; r != nil {
			r.failed = ev.ErrorText
			if ev.BlockedReason != "" {
				r.failed += " (blocked: " + string(ev.BlockedReason) + ")"
			}
		}
	}
}

// document returns the request of the document at u, or nil.
func (e *pageEvents) document(u string) *request {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, id := range e.order {
		if r := e.requests[id]; r.document && r.url == u {
			return r
		}
	}
	return nil
}

// isOwn reports whether u is the URL of one of the browser's own
// requests. e.mu is held.
func (e *pageEvents) isOwn(u string) bool {
	for _, r := range e.requests {
		if r.own && r.url == u {
			return true
		}
	}
	return false
}

// inFlight counts the requests neither finished nor failed.
func (e *pageEvents) inFlight() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, r := range e.requests {
		if !r.finished && r.failed == "" && !r.own {
			n++
		}
	}
	return n
}

// problems lists the console messages and the failed requests of the
// page requested as u and loaded from final (after redirects). The
// document's own status is checked by crawl.check.
func (e *pageEvents) problems(u, final string) []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	p := slices.Clone(e.console)
	for _, l := range e.logs {
		// The browser logs a document's 4xx or 5xx as a failed load:
		// crawl.check checks that status against the one expected.
		if l.source != string(cdplog.EntrySourceNetwork) || l.url != u && l.url != final && !e.isOwn(l.url) {
			p = append(p, l.text)
		}
	}
	for _, id := range e.order {
		r := e.requests[id]
		switch {
		case r.document && (r.url == u || r.url == final):
			// the navigation: crawl.check checks its status
		case r.own:
			// not the page's; crawl.check checks the icon when asked
		case r.status >= 400:
			p = append(p, fmt.Sprintf("%s: status %d", r.url, r.status))
		case r.failed != "":
			p = append(p, fmt.Sprintf("%s failed to load: %s", r.url, r.failed))
		case !r.finished:
			p = append(p, fmt.Sprintf("%s: still loading after %v", r.url, settleTimeout))
		}
	}
	return p
}

// encoded lists the requests whose response came with a Content-Encoding
// and loaded fully: the browser decoded them.
func (e *pageEvents) encoded() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var enc []string
	for _, id := range e.order {
		if r := e.requests[id]; r.encoding != "" && r.finished {
			enc = append(enc, r.encoding+" "+r.url)
		}
	}
	return enc
}

// pathShape is path with its all-digit segments replaced by "N": the
// pages of one route that differ by an ID have one shape.
func pathShape(path string) string {
	segs := strings.Split(path, "/")
	for i, s := range segs {
		if s != "" && strings.Trim(s, "0123456789") == "" {
			segs[i] = "N"
		}
	}
	return strings.Join(segs, "/")
}

// screenshotName is the file name of the screenshot of the page at path:
// the path's segments joined by "-", "index" for "/", and the query
// after "_", all but letters, digits, "." and "-" turned into "_".
func screenshotName(path, query string) string {
	name := strings.ReplaceAll(strings.Trim(path, "/"), "/", "-")
	if name == "" {
		name = "index"
	}
	if query != "" {
		name += "_" + query
	}
	return unsafeName.ReplaceAllString(name, "_") + ".jpg"
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9.-]`)
