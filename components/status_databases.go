package components

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"

	"github.com/sluice-server/sluice/sqldata"
)

// DatabaseStatus is the load of one data source (see sqldata.Stats), as
// the status page shows it.
type DatabaseStatus struct {
	Name     string `json:"name"`
	Driver   string `json:"driver"`
	Running  int    `json:"running"`   // queries holding a slot
	Waiting  int    `json:"waiting"`   // queries queued for a slot
	Rejected uint64 `json:"rejected"`  // queries shed (503) since the config loaded
	TimedOut uint64 `json:"timed_out"` // queries past their timeout (504) since the config loaded
}

// databaseStatus returns the load of dbs, by name.
func databaseStatus(dbs map[string]*sqldata.DB) []DatabaseStatus {
	var out []DatabaseStatus
	for _, name := range slices.Sorted(maps.Keys(dbs)) {
		db := dbs[name]
		st := db.Stats()
		out = append(out, DatabaseStatus{name, db.Driver(), st.Running, st.Waiting, st.Rejected, st.TimedOut})
	}
	return out
}

// databasesPrometheus writes the sluice_database_* series, labelled
// database="NAME".
func databasesPrometheus(b *bytes.Buffer, selfAnd string, ds []DatabaseStatus) {
	if len(ds) == 0 {
		return
	}
	series := []struct {
		name, typ, help string
		value           func(d *DatabaseStatus) any
	}{
		{"sluice_database_queries_running", "gauge", "Queries holding a slot of the data source.", func(d *DatabaseStatus) any { return d.Running }},
		{"sluice_database_queries_waiting", "gauge", "Queries queued for a slot of the data source.", func(d *DatabaseStatus) any { return d.Waiting }},
		{"sluice_database_queries_rejected_total", "counter", "Queries shed with 503 because the data source was busy.", func(d *DatabaseStatus) any { return d.Rejected }},
		{"sluice_database_queries_timed_out_total", "counter", "Queries cancelled at their timeout (504).", func(d *DatabaseStatus) any { return d.TimedOut }},
	}
	for _, s := range series {
		promMetric(b, s.name, s.typ, s.help)
		for i := range ds {
			fmt.Fprintf(b, "%s{%sdatabase=%q} %v\n", s.name, selfAnd, ds[i].Name, s.value(&ds[i]))
		}
	}
}

// databasesHTML writes a table of the data sources.
func databasesHTML(b *bytes.Buffer, ds []DatabaseStatus) {
	if len(ds) == 0 {
		return
	}
	b.WriteString("<h2>Databases</h2>\n<table>\n<tr><th>Database</th><th>Driver</th><th>Running</th><th>Waiting</th><th>Shed (503)</th><th>Timed out (504)</th></tr>\n")
	for _, d := range ds {
		fmt.Fprintf(b, "<tr><th>%s</th><td>%s</td><td>%d</td><td>%d</td><td>%d</td><td>%d</td></tr>\n",
			html.EscapeString(d.Name), strings.ToLower(d.Driver), d.Running, d.Waiting, d.Rejected, d.TimedOut)
	}
	b.WriteString("</table>\n")
}
