package components

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/sluicetest"
	"github.com/sluice-server/sluice/sqldata"
	"github.com/sluice-server/sluice/sqldata/sqltest"
)

// The status page shows each data source's load: queries running and
// shed.
func TestStatusDatabases(t *testing.T) {
	gate, open := sqltest.Gate(t)
	db := templateDB(t, sqldata.Options{MaxConcurrent: 1, Queue: -1, Timeout: time.Hour})
	q, err := db.Query(sqldata.QueryOptions{Name: "held", SQL: "SELECT sluice_gate(?)"})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() { q.Run(context.Background(), gate) })
	sluicetest.WaitFor(t, "the held query running", func() bool { return db.Stats().Running == 1 })
	if _, err := q.Run(context.Background(), gate); !errors.Is(err, sqldata.ErrBusy) {
		t.Fatalf("second query: %v, want ErrBusy", err)
	}
	st, err := NewStatus(StatusOptions{Stats: NewStats(), Databases: map[string]*sqldata.DB{"main": db}})
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + sluicetest.NewServer(t, pipe.Handler(st)).Addr + "/"

	_, body := sluicetest.Get(t, url+"?format=json")
	var snap StatsSnapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
	want := []DatabaseStatus{{Name: "main", Driver: "sqlite", Running: 1, Rejected: 1}}
	if len(snap.Databases) != 1 || snap.Databases[0] != want[0] {
		t.Errorf("databases %+v, want %+v", snap.Databases, want)
	}
	_, body = sluicetest.Get(t, url+"?format=prometheus")
	for _, line := range []string{
		`sluice_database_queries_running{database="main"} 1`,
		`sluice_database_queries_rejected_total{database="main"} 1`,
		`sluice_database_queries_timed_out_total{database="main"} 0`,
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("prometheus lacks %q:\n%s", line, body)
		}
	}
	_, body = sluicetest.Get(t, url+"?format=html")
	if !strings.Contains(body, "<tr><th>main</th><td>sqlite</td><td>1</td><td>0</td><td>1</td><td>0</td></tr>") {
		t.Errorf("html lacks the database:\n%s", body)
	}
	open()
	wg.Wait()
}
