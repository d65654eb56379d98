package sqltest

import (
	"database/sql/driver"
	"fmt"
	"sync"
	"testing"

	"modernc.org/sqlite"
)

// A gate holds SQLite queries until the test opens it: a query calling
// the SQL function sluice_gate(NAME) blocks until the gate NAME (from
// Gate) opens, so a test can hold a data source's slots without timing.
var gates struct {
	sync.Mutex
	once sync.Once
	open map[string]chan struct{}
	n    int
}

// Gate returns the name of a new closed gate and the function that opens
// it (which the test's cleanup calls too, so that no query is left
// blocked). A query `SELECT sluice_gate('NAME')` on a "sqlite" data
// source blocks until then and returns 1; it blocks its connection, and
// is not interrupted by its context.
func Gate(t testing.TB) (name string, open func()) {
	gates.once.Do(func() {
		gates.open = map[string]chan struct{}{}
		err := sqlite.RegisterScalarFunction("sluice_gate", 1, func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			name, _ := args[0].(string)
			gates.Lock()
			ch := gates.open[name]
			gates.Unlock()
			if ch == nil {
				return nil, fmt.Errorf("sluice_gate: no gate %q", name)
			}
			<-ch
			return int64(1), nil
		})
		if err != nil {
			panic(err)
		}
	})
	gates.Lock()
	gates.n++
	name = fmt.Sprintf("gate%d", gates.n)
	ch := make(chan struct{})
	gates.open[name] = ch
	gates.Unlock()
	var once sync.Once
	open = func() { once.Do(func() { close(ch) }) }
	t.Cleanup(open)
	return name, open
}
