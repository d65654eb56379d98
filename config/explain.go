package config

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/sluice-server/sluice/pipe"
)

// Explain writes a description of the network c builds: the server
// settings and the files included, then each route in the order written
// (under its site's hosts and error pages, when the file has sites) —
// what it matches, the file it comes from if included, and its
// components in the order they run, each with its kind and the options
// the file gives it. `sluice check --explain` prints it.
func (c *Config) Explain(w io.Writer) error {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	var addrs []string
	for _, a := range c.Listen {
		addrs = append(addrs, a.String()+c.ListenOptions[a].explain())
	}
	fmt.Fprintf(tw, "listen\t%s\n", strings.Join(addrs, ", "))
	workers := strconv.Itoa(c.Workers)
	if c.Workers == WorkersAuto {
		workers = "auto"
	}
	fmt.Fprintf(tw, "workers\t%s\n", workers)
	sh := strconv.Quote(c.ServerHeader)
	if c.ServerHeader == "" {
		sh = "none"
	}
	fmt.Fprintf(tw, "server_header\t%s\n", sh)
	var lims []string
	for _, k := range c.LimitsSet {
		v, _ := c.LimitValue(k)
		lims = append(lims, k+" "+v)
	}
	if len(lims) == 0 {
		lims = []string{"defaults"}
	}
	fmt.Fprintf(tw, "limits\t%s\n", strings.Join(lims, ", "))
	fmt.Fprintf(tw, "log\t%s, %s, to %s\n", strings.ToLower(c.Log.Level.String()), c.Log.Format, c.Log.Output)
	if id := c.explainRequestID(); id != "" {
		fmt.Fprintf(tw, "request_id\t%s\n", id)
	}
	if c.Tracer != nil {
		o := c.Tracer.Options()
		parent := "the caller's sampled flag ignored"
		if o.HonorParent {
			parent = "the caller's sampled flag followed"
		}
		fmt.Fprintf(tw, "tracing\tto %s, sample %v, service %s, %s\n", o.Endpoint, *o.Sample, o.Service, parent)
	}
	if c.AccessLog != nil {
		fmt.Fprintf(tw, "access_log\t%s\n", cmp.Or(describeStage(c.AccessLog), "to stdout")+", every route but those whose log replaces it")
	}
	if c.ErrorPages != nil {
		fmt.Fprintf(tw, "error_pages\t%s\n", c.ErrorPages)
	}
	if c.PidFile != "" {
		fmt.Fprintf(tw, "pid_file\t%s\n", c.PidFile)
	}
	if c.User != "" {
		group := ""
		if c.Group != "" {
			group = ", group " + c.Group
		}
		fmt.Fprintf(tw, "user\t%s%s\n", c.User, group)
	}
	if a := c.Admin; a != nil {
		// The tokens are not shown, only their names.
		if a.Listen != "" {
			fmt.Fprintf(tw, "admin\t%s, tokens %s, state %s\n", a.Listen, strings.Join(slices.Sorted(maps.Keys(a.Tokens)), " "), a.State)
		} else {
			fmt.Fprintf(tw, "admin\tunix:%s (0600), state %s\n", a.Socket, a.State)
		}
	}
	// A database's dsn is not shown: it may hold a password.
	for _, name := range slices.Sorted(maps.Keys(c.Databases)) {
		o := c.Databases[name].Options()
		fmt.Fprintf(tw, "database %s\t%s, pool %d, %d queries at once, %d queued, timeout %s\n",
			name, o.Driver, o.Pool, o.MaxConcurrent, o.Queue, FormatDuration(o.Timeout))
	}
	if len(c.Files) > 1 {
		fmt.Fprintf(tw, "included\t%s\n", strings.Join(c.Files[1:], ", "))
	}
	tw.Flush()

	var site *Site
	for i, r := range c.Routes {
		if r.Site != site || i == 0 && len(c.Sites) > 0 {
			site = r.Site
			if site == nil {
				b.WriteString("\ntop-level routes: every host no site names\n")
			} else {
				fmt.Fprintf(&b, "\nsite %s\n", site)
				if site.ErrorPages != nil {
					fmt.Fprintf(&b, "  error pages: %s\n", site.ErrorPages)
				}
			}
		}
		fmt.Fprintf(&b, "\nroute %d: %s", i+1, describeMatch(r.Match))
		if r.Host != "" {
			fmt.Fprintf(&b, ", host %s", r.Host)
		}
		if len(r.Methods) > 0 {
			fmt.Fprintf(&b, ", methods %s", strings.Join(r.Methods, " "))
		}
		for _, m := range r.When {
			fmt.Fprintf(&b, ", %s", m)
		}
		if r.File != c.File && r.File != "" {
			fmt.Fprintf(&b, ", from %s", r.File)
		}
		b.WriteString("\n")
		if r.ErrorPages != nil {
			fmt.Fprintf(&b, "  error pages: %s\n", r.ErrorPages)
		}
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for j, s := range r.Stages {
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\n", j+1, s.Name, s.Kind(), describeStage(s))
		}
		tw.Flush()
	}
	_, err := io.WriteString(w, trimLines(b.String()))
	return err
}

// describeMatch lists patterns, marking prefixes.
func describeMatch(match []string) string {
	var parts []string
	for _, m := range match {
		switch {
		case strings.HasPrefix(m, pipe.RegexPrefix):
			parts = append(parts, m+" (regular expression)")
		case pipe.PatternKey(m) != m:
			parts = append(parts, m+" (path parameters)")
		case strings.HasSuffix(m, "/"):
			parts = append(parts, m+" (prefix)")
		default:
			parts = append(parts, m+" (exact)")
		}
	}
	return strings.Join(parts, ", ")
}

// describeStage lists a stage's options as written and, for a pipe that
// may stop the pipeline, the response it stops with.
func describeStage(s *Stage) string {
	var parts []string
	for _, o := range s.Options {
		parts = append(parts, o.Key+": "+o.Value)
	}
	d := strings.Join(parts, ", ")
	switch {
	case s.Registration.Answers:
		d = strings.TrimSpace(d + "  (answers " + s.Registration.Stops + ", ends the pipeline)")
	case s.Registration.Stops != "":
		d = strings.TrimSpace(d + "  (may answer " + s.Registration.Stops + " and stop)")
	}
	return d
}

// trimLines removes trailing spaces tabwriter leaves.
func trimLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}
