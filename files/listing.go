package files

import (
	"bufio"
	"cmp"
	"encoding/json"
	"html"
	"io"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/engine"
	"github.com/sluice-server/sluice/httpgrammar"
)

// listBatch is how many directory entries a listing reads at a time.
const listBatch = 256

// listBufSize is the buffer a listing is rendered into on its way to the
// client: what a listing holds beyond its entries, however slowly the
// client reads.
const listBufSize = 16 << 10

// listEntry is one entry of a directory listing, kept small: a listing
// holds at most Options.MaxListing of them until its client has read it.
type listEntry struct {
	name string
	size int64 // 0 for a directory
	mod  int64 // modification time, Unix seconds
	dir  bool
}

// listItem is the JSON form of a listEntry, the listing's JSON format.
type listItem struct {
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	IsDir   bool      `json:"is_dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// listing is a directory listing decided but not yet sent: the entries
// shown, in order, and how to render them. It refers to nothing of the
// request, and is used by one goroutine at a time.
type listing struct {
	dir     string      // the directory's URL path, for the title
	top     bool        // the root: no "../" row
	entries []listEntry // sorted
	total   int         // the entries the directory has; more than shown when capped
	key     string      // "name", "size" or "time"
	desc    bool
	json    bool
}

// listing reads the directory of e (a browse entry) for r and keeps the
// entries it shows: those the Server would serve (dotfiles only when
// Options.Dotfiles allows them, symbolic links only when their target is
// reachable), the first Options.MaxListing in the order the query asks
// for (sort=name|size|time, order=asc|desc; default name, asc;
// directories first). The directory is read listBatch entries at a time,
// and only the entries kept stay in memory, so a listing's memory is
// bounded whatever the directory's size. It renders JSON when the client
// prefers application/json to text/html, else HTML.
func (s *Server) listing(r *engine.Request, e *entry) (*listing, error) {
	q, _ := url.ParseQuery(string(r.Query))
	l := &listing{dir: s.opts.StripPrefix + e.key, top: e.key == "/", key: q.Get("sort"),
		desc: q.Get("order") == "desc", json: prefersJSON(r.HeaderList("Accept"))}
	if l.key != "size" && l.key != "time" {
		l.key = "name"
	}
	sel := listTop{max: s.opts.MaxListing, cmp: l.compare}
	add := func(des []fs.DirEntry) {
		for _, de := range des {
			name := de.Name()
			if s.opts.Dotfiles != DotfilesAllow && isDotName(e.key, name) {
				continue
			}
			full := name
			if e.name != "." {
				full = e.name + "/" + name
			}
			fi, err := fs.Stat(s.fsys, full) // follows links the Server would follow
			if err != nil || !fi.IsDir() && !fi.Mode().IsRegular() {
				continue
			}
			le := listEntry{name: name, dir: fi.IsDir(), mod: fi.ModTime().Unix()}
			if !le.dir {
				le.size = fi.Size()
			}
			l.total++
			sel.add(le)
		}
	}
	f, err := s.fsys.Open(e.name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	d, ok := f.(fs.ReadDirFile)
	if !ok {
		// An fs.FS whose directories cannot be read in parts: all at once.
		des, err := fs.ReadDir(s.fsys, e.name)
		if err != nil {
			return nil, err
		}
		add(des)
	}
	for ok {
		des, err := d.ReadDir(listBatch)
		add(des)
		if err == io.EOF || err == nil && len(des) == 0 {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	l.entries = sel.sorted()
	return l, nil
}

// ctype returns the listing's Content-Type.
func (l *listing) ctype() string {
	if l.json {
		return "application/json"
	}
	return "text/html; charset=utf-8"
}

// compare orders entries for the listing: directories first, then by the
// sort key and name, reversed for order=desc.
func (l *listing) compare(a, b *listEntry) int {
	if a.dir != b.dir {
		if a.dir {
			return -1
		}
		return 1
	}
	c := 0
	switch l.key {
	case "size":
		c = cmp.Compare(a.size, b.size)
	case "time":
		c = cmp.Compare(a.mod, b.mod)
	}
	if c == 0 {
		c = strings.Compare(a.name, b.name)
	}
	if l.desc {
		c = -c
	}
	return c
}

// listTop keeps the max entries that come first by cmp among those it is
// given, in a heap whose root is the last of them.
type listTop struct {
	max int
	cmp func(a, b *listEntry) int
	h   []listEntry
}

// add offers e.
func (t *listTop) add(e listEntry) {
	if len(t.h) < t.max {
		t.h = append(t.h, e)
		for i := len(t.h) - 1; i > 0; {
			p := (i - 1) / 2
			if t.cmp(&t.h[p], &t.h[i]) >= 0 {
				break
			}
			t.h[p], t.h[i] = t.h[i], t.h[p]
			i = p
		}
		return
	}
	if len(t.h) == 0 || t.cmp(&e, &t.h[0]) >= 0 {
		return
	}
	t.h[0] = e
	for i := 0; ; {
		m := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < len(t.h) && t.cmp(&t.h[c], &t.h[m]) > 0 {
				m = c
			}
		}
		if m == i {
			break
		}
		t.h[i], t.h[m] = t.h[m], t.h[i]
		i = m
	}
}

// sorted returns the entries kept, in order.
func (t *listTop) sorted() []listEntry {
	slices.SortFunc(t.h, func(a, b listEntry) int { return t.cmp(&a, &b) })
	return t.h
}

// writeTo renders the listing to w through a small buffer, so that what a
// slow client has yet to read is the entries, not the page.
func (l *listing) writeTo(w io.Writer) error {
	bw := bufio.NewWriterSize(w, listBufSize)
	if l.json {
		l.writeJSON(bw)
	} else {
		l.writeHTML(bw)
	}
	return bw.Flush() // a write error sticks: Flush reports it
}

// writeJSON renders the entries as a JSON array of listItem.
func (l *listing) writeJSON(b *bufio.Writer) {
	b.WriteByte('[')
	for i := range l.entries {
		if i > 0 {
			b.WriteByte(',')
		}
		it := l.entries[i].item()
		j, _ := json.Marshal(&it) // a listItem always marshals
		b.Write(j)
	}
	b.WriteString("]\n")
}

// item returns the JSON form of le.
func (le *listEntry) item() listItem {
	return listItem{Name: le.name, URL: le.url(), IsDir: le.dir, Size: le.size, ModTime: time.Unix(le.mod, 0).UTC()}
}

// url returns the relative link to le: "./" keeps a name with a colon
// from reading as a URL scheme; a directory's ends in a slash.
func (le *listEntry) url() string {
	u := "./" + url.PathEscape(le.name)
	if le.dir {
		u += "/"
	}
	return u
}

// writeHTML renders the listing as an HTML page whose column headings
// sort, noting when it shows only the first entries.
func (l *listing) writeHTML(b *bufio.Writer) {
	title := html.EscapeString("Index of " + l.dir)
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>")
	b.WriteString(title)
	b.WriteString("</title>\n<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}" +
		"td,th{padding:.2em 1em;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}</style>\n</head><body>\n<h1>")
	b.WriteString(title)
	b.WriteString("</h1>\n")
	if len(l.entries) < l.total {
		b.WriteString("<p>The first " + strconv.Itoa(len(l.entries)) + " of " + strconv.Itoa(l.total) +
			" entries in this order.</p>\n")
	}
	b.WriteString("<table>\n<thead><tr>")
	for _, col := range [...]struct{ key, label string }{{"name", "Name"}, {"size", "Size"}, {"time", "Modified"}} {
		order := "asc"
		mark := ""
		if col.key == l.key {
			if !l.desc {
				order, mark = "desc", " ↑"
			} else {
				mark = " ↓"
			}
		}
		b.WriteString("<th><a href=\"?sort=" + col.key + "&amp;order=" + order + "\">" + col.label + mark + "</a></th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	if !l.top {
		b.WriteString("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n")
	}
	for i := range l.entries {
		le := &l.entries[i]
		name := le.name
		if le.dir {
			name += "/"
		}
		mod := time.Unix(le.mod, 0).UTC()
		b.WriteString("<tr><td><a href=\"")
		b.WriteString(html.EscapeString(le.url()))
		b.WriteString("\">")
		b.WriteString(html.EscapeString(name))
		b.WriteString("</a></td><td class=\"n\"")
		if !le.dir {
			b.WriteString(" title=\"" + strconv.FormatInt(le.size, 10) + " bytes\">")
			b.WriteString(humanSize(le.size))
		} else {
			b.WriteString(">")
		}
		b.WriteString("</td><td><time datetime=\"" + mod.Format(time.RFC3339) + "\">")
		b.WriteString(mod.Format("2006-01-02 15:04:05"))
		b.WriteString("</time></td></tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n</body></html>\n")
}

// humanSize formats n bytes as "512 B", "1.5 KiB", "20 MiB".
func humanSize(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " B"
	}
	f := float64(n)
	for _, unit := range []string{"KiB", "MiB", "GiB", "TiB"} {
		f /= 1024
		if f < 1024 || unit == "TiB" {
			prec := 1
			if f >= 10 {
				prec = 0
			}
			return strconv.FormatFloat(f, 'f', prec, 64) + " " + unit
		}
	}
	return ""
}

// listingFormats are the listing's media types, in the order that
// decides between equally acceptable ones: HTML, then JSON.
var listingFormats = []string{"text/html", "application/json"}

// prefersJSON reports whether an Accept field value (nil when absent)
// chooses application/json over text/html, as httpgrammar.Negotiate
// decides; HTML is the default, for a tie and for a field that accepts
// neither.
func prefersJSON(accept []byte) bool {
	return httpgrammar.Negotiate(accept, listingFormats) == 1
}
