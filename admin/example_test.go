package admin_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/sluice-server/sluice/admin"
	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// static is a Backend serving one config that never changes.
type static struct{ data []byte }

func (s static) Running() (string, []byte) { return "site.yaml", s.data }
func (s static) Load([]byte) error         { return fmt.Errorf("this server's config does not change") }
func (s static) Purge(components.Purge) (int, int, error) {
	return 0, 1, nil
}
func (s static) Upstreams() ([]admin.SetState, error) { return nil, nil }
func (s static) ChangeUpstream(string, admin.Change) (admin.SetState, error) {
	return admin.SetState{}, admin.ErrNoSet
}

// A Server serves the API of an admin section for a Backend; here on a
// Unix socket in a temporary directory, called as curl --unix-socket
// would.
func ExampleServer() {
	dir, _ := os.MkdirTemp("", "admin-example")
	defer os.RemoveAll(dir)
	srv := &admin.Server{
		Config:  &config.Admin{Socket: filepath.Join(dir, "admin.sock"), State: filepath.Join(dir, "state.json")},
		Backend: static{[]byte("routes: []\n")},
		UID:     -1,
	}
	if err := srv.Start(); err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Close()
	c := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", srv.Config.Socket)
	}}}
	resp, err := c.Get("http://admin/config")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.Status, " ", string(body))
	// Output: 200 OK {"file":"site.yaml","yaml":"routes: []\n"}
}
