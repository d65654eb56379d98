package files

import (
	"bytes"
	"cmp"
	"encoding/json"
	"html"
	"io/fs"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-server/sluice/engine"
)

// listItem is one entry of a directory listing; its JSON form is the
// listing's JSON format.
type listItem struct {
	Name    string    `json:"name"`
	URL     string    `json:"url"`
	IsDir   bool      `json:"is_dir"`
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mod_time"`
}

// listing renders the directory of e (a browse entry) for r: JSON when
// the client prefers application/json to text/html, else HTML. Entries
// are those the Server would serve: dotfiles only when Options.Dotfiles
// allows them, symbolic links only when their target is reachable. The
// order comes from the query: sort=name|size|time, order=asc|desc
// (default name, asc); directories come first.
func (s *Server) listing(r *engine.Request, e *entry) (ctype string, body []byte, err error) {
	des, err := fs.ReadDir(s.fsys, e.name)
	if err != nil {
		return "", nil, err
	}
	items := make([]listItem, 0, len(des))
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
		it := listItem{Name: name, IsDir: fi.IsDir(), ModTime: fi.ModTime().UTC().Truncate(time.Second)}
		// "./" keeps a name with a colon from reading as a URL scheme.
		it.URL = "./" + url.PathEscape(name)
		if it.IsDir {
			it.URL += "/"
		} else {
			it.Size = fi.Size()
		}
		items = append(items, it)
	}
	q, _ := url.ParseQuery(string(r.Query))
	key, desc := q.Get("sort"), q.Get("order") == "desc"
	slices.SortStableFunc(items, func(a, b listItem) int {
		if a.IsDir != b.IsDir {
			if a.IsDir {
				return -1
			}
			return 1
		}
		c := 0
		switch key {
		case "size":
			c = cmp.Compare(a.Size, b.Size)
		case "time":
			c = a.ModTime.Compare(b.ModTime)
		}
		if c == 0 {
			c = strings.Compare(a.Name, b.Name)
		}
		if desc {
			c = -c
		}
		return c
	})
	if prefersJSON(r.HeaderList("Accept")) {
		b, err := json.Marshal(items)
		if err != nil {
			return "", nil, err
		}
		return "application/json", append(b, '\n'), nil
	}
	return "text/html; charset=utf-8", s.listingHTML(e, items, key, desc), nil
}

// listingHTML renders items as an HTML page whose column headings sort.
func (s *Server) listingHTML(e *entry, items []listItem, key string, desc bool) []byte {
	dir := s.opts.StripPrefix + e.key
	var b bytes.Buffer
	title := html.EscapeString("Index of " + dir)
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width\">\n<title>")
	b.WriteString(title)
	b.WriteString("</title>\n<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}" +
		"td,th{padding:.2em 1em;text-align:left}td.n{text-align:right;font-variant-numeric:tabular-nums}</style>\n</head><body>\n<h1>")
	b.WriteString(title)
	b.WriteString("</h1>\n<table>\n<thead><tr>")
	for _, col := range [...]struct{ key, label string }{{"name", "Name"}, {"size", "Size"}, {"time", "Modified"}} {
		order := "asc"
		mark := ""
		if col.key == key || key == "" && col.key == "name" {
			if !desc {
				order, mark = "desc", " ↑"
			} else {
				mark = " ↓"
			}
		}
		b.WriteString("<th><a href=\"?sort=" + col.key + "&amp;order=" + order + "\">" + col.label + mark + "</a></th>")
	}
	b.WriteString("</tr></thead>\n<tbody>\n")
	if e.key != "/" {
		b.WriteString("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n")
	}
	for _, it := range items {
		name := it.Name
		if it.IsDir {
			name += "/"
		}
		b.WriteString("<tr><td><a href=\"")
		b.WriteString(html.EscapeString(it.URL))
		b.WriteString("\">")
		b.WriteString(html.EscapeString(name))
		b.WriteString("</a></td><td class=\"n\"")
		if !it.IsDir {
			b.WriteString(" title=\"" + strconv.FormatInt(it.Size, 10) + " bytes\">")
			b.WriteString(humanSize(it.Size))
		} else {
			b.WriteString(">")
		}
		b.WriteString("</td><td><time datetime=\"" + it.ModTime.Format(time.RFC3339) + "\">")
		b.WriteString(it.ModTime.Format("2006-01-02 15:04:05"))
		b.WriteString("</time></td></tr>\n")
	}
	b.WriteString("</tbody>\n</table>\n</body></html>\n")
	return b.Bytes()
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

// prefersJSON reports whether an Accept field value gives application/json
// a higher weight than text/html (RFC 9110 §12.5.1: the most specific
// range that matches a type gives its weight).
func prefersJSON(accept []byte) bool {
	if accept == nil {
		return false
	}
	return acceptQ(accept, "application", "json") > acceptQ(accept, "text", "html")
}

// acceptQ returns the weight, in thousandths, Accept gives type/sub.
func acceptQ(accept []byte, typ, sub string) int {
	q, spec := 0, -1 // spec: 0 "*/*", 1 "type/*", 2 "type/sub"
	for rest := accept; len(rest) > 0; {
		var elem []byte
		elem, rest = nextListElement(rest)
		mr, params := cutByte(elem, ';')
		mr = trimOWS(mr)
		t, st := cutByte(mr, '/')
		var s int
		switch {
		case len(t) == 1 && t[0] == '*' && len(st) == 1 && st[0] == '*':
			s = 0
		case asciiEqualFold(t, typ) && len(st) == 1 && st[0] == '*':
			s = 1
		case asciiEqualFold(t, typ) && asciiEqualFold(st, sub):
			s = 2
		default:
			continue
		}
		w, ok := parseQ(params)
		if !ok || s < spec {
			continue
		}
		if s > spec {
			q, spec = w, s
		} else {
			q = max(q, w)
		}
	}
	return q
}
