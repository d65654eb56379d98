package requestid_test

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"strings"

	"github.com/sluice-server/sluice/pipe"
	"github.com/sluice-server/sluice/requestid"
	"github.com/sluice-server/sluice/sluicetest"
)

// A server whose requests get IDs: made for each, or kept from the
// balancers at 10.0.0.0/8, and sent back to the client. Components after
// the stage read the ID from the Conn, or from the request's header,
// which now carries it.
func Example() {
	ids, err := requestid.New(requestid.Options{TrustedProxies: []string{"10.0.0.0/8"}, Response: true})
	if err != nil {
		log.Fatal(err)
	}
	app := pipe.Source(func(c *pipe.Conn) pipe.Content {
		same := string(c.RequestID()) == string(c.Request.Header("X-Request-Id"))
		return func(w pipe.Writer) error {
			_, err := fmt.Fprintf(w, "%d hex digits, in the header too: %v", len(c.RequestID()), same)
			return err
		}
	})
	srv, err := sluicetest.Start(pipe.Handler(pipe.Chain{ids, app}))
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/", nil)
	req.Header.Set("X-Request-Id", "chosen-by-the-client")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	body := string(b)
	fmt.Println(body)
	fmt.Println(len(resp.Header.Get("X-Request-Id")) == requestid.Len, !strings.Contains(body, "chosen"))
	// Output:
	// 32 hex digits, in the header too: true
	// true true
}
