package config

import (
	"fmt"
	"io"
	"strings"

	"github.com/sluice-server/sluice/components"
)

// kindColors fills component boxes by kind in graphs.
var kindColors = map[components.Kind]string{
	components.KindPipe:   "#fde68a",
	components.KindSource: "#bfdbfe",
	components.KindFilter: "#bbf7d0",
}

// Graph writes the process network c builds as a Graphviz DOT digraph,
// drawn like the webpipes paper's figures: the front end reads requests
// and hands them to the router, which sends each down the pipeline of its
// route (the edge is labelled with the route's patterns); each pipeline's
// components run left to right into its output, and every output returns
// to the back end, which writes the response and keeps or closes the
// connection. A pipe that may answer early has a dashed edge, labelled
// with its response, straight to its route's output (the paper's
// branching network, Figure 3). Components are coloured by kind.
func (c *Config) Graph(w io.Writer) error {
	var b strings.Builder
	var addrs []string
	for _, a := range c.Listen {
		addrs = append(addrs, a.String())
	}
	fmt.Fprintf(&b, "digraph sluice {\n")
	fmt.Fprintf(&b, "\tgraph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, label=%s, labelloc=t, nodesep=0.3];\n", dotQuote(c.File))
	fmt.Fprintf(&b, "\tnode [fontname=\"Helvetica\", fontsize=11, shape=box, style=\"rounded,filled\", fillcolor=white];\n")
	fmt.Fprintf(&b, "\tedge [fontname=\"Helvetica\", fontsize=10];\n")
	fmt.Fprintf(&b, "\tfrontend [label=%s, shape=box, style=filled, fillcolor=\"#e5e7eb\"];\n", dotQuote("front end\n"+strings.Join(addrs, "\n")))
	fmt.Fprintf(&b, "\trouter [label=\"router\", shape=diamond, style=filled, fillcolor=\"#e5e7eb\"];\n")
	fmt.Fprintf(&b, "\tbackend [label=\"back end\", shape=box, style=filled, fillcolor=\"#e5e7eb\"];\n")
	fmt.Fprintf(&b, "\tfrontend -> router;\n")
	for i, r := range c.Routes {
		id := fmt.Sprintf("r%d", i+1)
		fmt.Fprintf(&b, "\tsubgraph cluster_%s {\n", id)
		fmt.Fprintf(&b, "\t\tlabel=%s; style=dashed; color=\"#9ca3af\"; fontsize=10;\n", dotQuote(fmt.Sprintf("route %d", i+1)))
		for j, s := range r.Stages {
			tip := strings.TrimSpace(s.Kind().String() + ": " + describeStage(s))
			fmt.Fprintf(&b, "\t\t%s_%d [label=%s, fillcolor=%q, tooltip=%s];\n", id, j+1, dotQuote(stageLabel(s)), kindColors[s.Kind()], dotQuote(strings.TrimSuffix(tip, ":")))
		}
		fmt.Fprintf(&b, "\t\t%s_out [label=\"output\"];\n", id)
		fmt.Fprintf(&b, "\t}\n")
		label := strings.Join(r.Match, "\n")
		if r.Host != "" {
			label += "\nhost " + r.Host
		}
		if r.Site != nil {
			label += "\nsite " + siteLabel(r.Site)
		}
		if len(r.Methods) > 0 {
			label += "\n" + strings.Join(r.Methods, " ")
		}
		for _, m := range r.When {
			label += "\n" + fmt.Sprint(m)
		}
		first := id + "_out"
		if len(r.Stages) > 0 {
			first = id + "_1"
		}
		fmt.Fprintf(&b, "\trouter -> %s [label=%s];\n", first, dotQuote(label))
		for j, s := range r.Stages {
			next := fmt.Sprintf("%s_%d", id, j+2)
			if j == len(r.Stages)-1 {
				next = id + "_out"
			}
			fmt.Fprintf(&b, "\t%s_%d -> %s;\n", id, j+1, next)
			if s.Registration.Stops != "" && !s.Registration.Answers && j < len(r.Stages)-1 {
				fmt.Fprintf(&b, "\t%s_%d -> %s_out [style=dashed, label=%s];\n", id, j+1, id, dotQuote(s.Registration.Stops))
			}
		}
		fmt.Fprintf(&b, "\t%s_out -> backend;\n", id)
	}
	// A legend of the kinds.
	fmt.Fprintf(&b, "\tsubgraph cluster_legend {\n\t\tlabel=\"kinds\"; style=dashed; color=\"#9ca3af\"; fontsize=10;\n")
	for _, k := range []components.Kind{components.KindPipe, components.KindSource, components.KindFilter} {
		fmt.Fprintf(&b, "\t\tlegend_%s [label=%q, fillcolor=%q];\n", k, k, kindColors[k])
	}
	fmt.Fprintf(&b, "\t\tlegend_pipe -> legend_source -> legend_filter [style=invis];\n")
	fmt.Fprintf(&b, "\t}\n}\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// siteLabel names a site in a graph: its first hosts, and how many more.
func siteLabel(s *Site) string {
	if len(s.Hosts) <= 3 {
		return s.String()
	}
	short := *s
	short.Hosts = s.Hosts[:2]
	return fmt.Sprintf("%s and %d more", short.String(), len(s.Hosts)-2)
}

// stageLabel is the component's name and its main option, if written.
func stageLabel(s *Stage) string {
	for _, o := range s.Options {
		if o.Key == s.Registration.Scalar {
			v := o.Value
			if r := []rune(v); len(r) > 40 {
				v = string(r[:37]) + "..."
			}
			return s.Name + "\n" + v
		}
	}
	return s.Name
}

// dotQuote quotes s as a DOT string; newlines become centred line breaks.
func dotQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case '\n':
			b.WriteString(`\n`)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
