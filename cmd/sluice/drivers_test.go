package main_test

import (
	"os/exec"
	"strings"
	"testing"
)

// driverPackages are the module paths of the SQL drivers sluice links.
var driverPackages = []string{"github.com/go-sql-driver/mysql", "github.com/jackc/pgx/", "modernc.org/sqlite"}

// The toolkit's packages link no SQL driver: a program embedding Sluice
// chooses its own. The sluice command links the three.
func TestDriversOnlyInCommand(t *testing.T) {
	deps := func(pkgs ...string) string {
		t.Helper()
		out, err := exec.Command("go", append([]string{"list", "-deps"}, pkgs...)...).Output()
		if err != nil {
			t.Fatalf("go list -deps %v: %v", pkgs, err)
		}
		return string(out)
	}
	toolkit := deps("github.com/sluice-server/sluice/sqldata", "github.com/sluice-server/sluice/components",
		"github.com/sluice-server/sluice/config", "github.com/sluice-server/sluice/daemon", "github.com/sluice-server/sluice/pipe")
	command := deps(".")
	for _, d := range driverPackages {
		if strings.Contains(toolkit, d) {
			t.Errorf("the toolkit's packages depend on %s", d)
		}
		if !strings.Contains(command, d) {
			t.Errorf("sluice does not link %s", d)
		}
	}
}
