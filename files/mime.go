package files

import (
	"mime"
	"path"
	"strings"
)

// types maps the common web extensions to their media types. Text types
// carry charset=utf-8. It is consulted before mime.TypeByExtension, whose
// answers depend on the host's mime.types files.
var types = map[string]string{
	".html":        "text/html; charset=utf-8",
	".htm":         "text/html; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".mjs":         "text/javascript; charset=utf-8",
	".txt":         "text/plain; charset=utf-8",
	".md":          "text/markdown; charset=utf-8",
	".csv":         "text/csv; charset=utf-8",
	".xml":         "text/xml; charset=utf-8",
	".json":        "application/json",
	".map":         "application/json",
	".webmanifest": "application/manifest+json",
	".wasm":        "application/wasm",
	".pdf":         "application/pdf",
	".zip":         "application/zip",
	".gz":          "application/gzip",
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
}

// defaultType is the media type of a file whose extension is unknown.
const defaultType = "application/octet-stream"

// typeByName returns the media type for a file name by its extension,
// case-insensitively.
func typeByName(name string) string {
	ext := strings.ToLower(path.Ext(name))
	if ext == "" {
		return defaultType
	}
	if t, ok := types[ext]; ok {
		return t
	}
	if t := mime.TypeByExtension(ext); t != "" {
		return t
	}
	return defaultType
}
