package files

import (
	"mime"
	"os"
	"path"
	"strings"
	"sync"
)

// types maps the common web extensions to their media types. Text types
// carry charset=utf-8. It is consulted before /etc/mime.types, whose
// answers depend on the host.
var types = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".txt":         "text/plain; charset=utf-8",
	".md":          "text/markdown; charset=utf-8",
	".csv":         "text/csv; charset=utf-8",
	".xml":         "application/xml", // no charset: the XML declaration names its encoding (RFC 7303 §3.2)
	".xhtml":       "application/xhtml+xml",
	".rss":         "application/rss+xml",
	".atom":        "application/atom+xml",
	".jsonld":      "application/ld+json",
	".yaml":        "text/yaml; charset=utf-8",
	".yml":         "text/yaml; charset=utf-8",
	".vtt":         "text/vtt; charset=utf-8",
	".ics":         "text/calendar; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".wasm":        "application/wasm",
	".pdf":         "application/pdf",
	".zip":         "application/zip",
	".gz":          "application/gzip",
	".br":          "application/x-brotli",
	".zst":         "application/zstd",
	".tar":         "application/x-tar",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".jpg":         "image/jpeg",
	".jpeg":        "image/jpeg",
	".gif":         "image/gif",
	".webp":        "image/webp",
	".avif":        "image/avif",
	".ico":         "image/x-icon",
	".woff":        "font/woff",
	".woff2":       "font/woff2",
	".ttf":         "font/ttf",
	".otf":         "font/otf",
	".mp3":         "audio/mpeg",
	".ogg":         "audio/ogg",
	".mp4":         "video/mp4",
	".webm":        "video/webm",
	".wav":         "audio/wav",
	".flac":        "audio/flac",
	".opus":        "audio/ogg",
	".m4a":         "audio/mp4",
	".ogv":         "video/ogg",
	".mov":         "video/quicktime",
	".bmp":         "image/bmp",
	".tif":         "image/tiff",
	".tiff":        "image/tiff",
	".jxl":         "image/jxl",
}

// defaultType is the media type of a file whose extension is unknown.
const defaultType = "application/octet-stream"

// mimeTypesFile is the system table consulted after the built-in one.
const mimeTypesFile = "/etc/mime.types"

// systemTypes holds the extensions of mimeTypesFile, read once on first
// use (nil when the file is missing).
var systemTypes = sync.OnceValue(func() map[string]string {
	b, err := os.ReadFile(mimeTypesFile)
	if err != nil {
		return nil
	}
	return parseMimeTypes(b)
})

// parseMimeTypes reads the mime.types format: "type/subtype ext ext ...",
// '#' comments. The first type listed for an extension wins.
func parseMimeTypes(b []byte) map[string]string {
	m := make(map[string]string)
	for line := range strings.Lines(string(b)) {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		fields := strings.Fields(line)
		if len(fields) < 2 || !validMediaType(fields[0]) {
			continue
		}
		typ := withCharset(strings.ToLower(fields[0]))
		for _, ext := range fields[1:] {
			ext = "." + strings.ToLower(ext)
			if _, ok := m[ext]; !ok {
				m[ext] = typ
			}
		}
	}
	return m
}

// withCharset adds "; charset=utf-8" to a text/* type without a charset.
func withCharset(typ string) string {
	if len(typ) > 5 && strings.EqualFold(typ[:5], "text/") && !strings.Contains(strings.ToLower(typ), "charset=") {
		return typ + "; charset=utf-8"
	}
	return typ
}

// validMediaType reports whether typ parses as a media type.
func validMediaType(typ string) bool {
	mt, _, err := mime.ParseMediaType(typ)
	return err == nil && strings.Count(mt, "/") == 1 && !strings.HasPrefix(mt, "/") && !strings.HasSuffix(mt, "/")
}

// typeTable resolves media types: per-Server overrides, then the built-in
// table, then /etc/mime.types, then Go's mime package.
type typeTable map[string]string

// newTypeTable normalises Options.Types.
func newTypeTable(overrides map[string]string) typeTable {
	t := make(typeTable, len(overrides))
	for ext, typ := range overrides {
		t[strings.ToLower(ext)] = withCharset(typ)
	}
	return t
}

// byName returns the media type for a file name by its extension,
// case-insensitively.
func (t typeTable) byName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return defaultType
	}
	if typ, ok := t[ext]; ok {
		return typ
	}
	if typ, ok := types[ext]; ok {
		return typ
	}
	if typ, ok := systemTypes()[ext]; ok {
		return typ
	}
	if typ := mime.TypeByExtension(ext); typ != "" {
		return withCharset(typ)
	}
	return defaultType
}

// typeByName is byName without overrides.
func typeByName(name string) string { return typeTable(nil).byName(name) }
