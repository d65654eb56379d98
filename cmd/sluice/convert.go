package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/convert"
	"github.com/sluice-server/sluice/convert/caddyfile"
	"github.com/sluice-server/sluice/convert/nginx"
)

var convertCommand = command{
	name: "convert",
	synopsis: `sluice convert [--from nginx|caddy] [-o OUT] FILE

Translates the nginx configuration or the Caddyfile FILE into a Sluice
config file, written to stdout (or to OUT with -o), formatted as sluice
fmt writes it. nginx's include directives are followed. --from names the
input's language; without it a file named Caddyfile (or *.caddyfile) is
read as a Caddyfile and any other as nginx's. Every directive that could
not be translated is left out and named on stderr as
FILE:LINE: directive "NAME": not translated: WHY. Files the config needs
beside it (the htpasswd file of a Caddyfile's basicauth users) are
written next to OUT, and only with -o. docs/convert.md says what is
translated and what is not. A directive left out makes the exit status
1, the config still written.`,
	operands: true,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		from := fs.String("from", "", "the input's language, `LANG`: nginx or caddy (default: from FILE's name)")
		out := fs.String("o", "", "write the config to the file `OUT` instead of stdout")
		return func(stdout, stderr io.Writer) int {
			// Flags may follow FILE too: sluice convert nginx.conf -o out.yaml.
			var files []string
			for rest := fs.Args(); len(rest) > 0; rest = fs.Args() {
				files = append(files, rest[0])
				if err := fs.Parse(rest[1:]); err != nil {
					fmt.Fprintf(stderr, "sluice convert: %v\n", err)
					return exitUsage
				}
			}
			if len(files) != 1 {
				fmt.Fprintln(stderr, "sluice convert: want one FILE to convert")
				return exitUsage
			}
			file := files[0]
			lang := *from
			if lang == "" {
				base := strings.ToLower(filepath.Base(file))
				lang = "nginx"
				if base == "caddyfile" || strings.HasSuffix(base, ".caddyfile") || strings.HasPrefix(base, "caddyfile") {
					lang = "caddy"
				}
			}
			var (
				cfg   *convert.Config
				notes []convert.Note
				extra map[string][]byte
				err   error
			)
			switch lang {
			case "nginx":
				cfg, notes, err = nginx.Convert(file)
			case "caddy", "caddyfile":
				cfg, extra, notes, err = caddyfile.Convert(file, *out != "")
			default:
				fmt.Fprintf(stderr, "sluice convert: --from %q: want nginx or caddy\n", lang)
				return exitUsage
			}
			if err != nil {
				fmt.Fprintf(stderr, "sluice convert: %v\n", err)
				return exitError
			}
			data, more := cfg.YAML("Converted by sluice convert from " + filepath.Base(file) + " (" + lang + ").")
			notes = convert.SortNotes(append(notes, more...))
			name := *out
			if name == "" {
				name = "sluice.yaml"
			}
			data, err = config.Format(name, data)
			if err != nil { // the YAML written above is always valid: a bug
				fmt.Fprintf(stderr, "sluice convert: %v\n", err)
				return exitError
			}
			for _, n := range notes {
				fmt.Fprintln(stderr, n)
			}
			if *out == "" {
				stdout.Write(data)
			} else {
				if err := os.WriteFile(*out, data, 0o644); err != nil {
					fmt.Fprintf(stderr, "sluice convert: %v\n", err)
					return exitError
				}
				for rel, content := range extra {
					f := filepath.Join(filepath.Dir(*out), rel)
					if err := os.WriteFile(f, content, 0o600); err != nil {
						fmt.Fprintf(stderr, "sluice convert: %v\n", err)
						return exitError
					}
				}
			}
			if len(notes) > 0 {
				return exitError
			}
			return exitOK
		}
	},
}
