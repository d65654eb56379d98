package nginx_test

import (
	"fmt"
	"os"

	"github.com/sluice-server/sluice/convert/nginx"
)

// Translate a server block: the config, then a note for each directive
// left out.
func ExampleTranslate() {
	dirs, err := nginx.Parse("site.conf", []byte(`
server {
    listen 8080;
    root /var/www/site;
    location = /healthz { return 200 "ok\n"; }
    location /api/ { proxy_pass http://127.0.0.1:9000/; proxy_set_header Host $host; }
    location ~ \.php$ { deny all; }
}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	cfg, notes := nginx.Translate(dirs)
	yaml, _ := cfg.YAML("")
	os.Stdout.Write(yaml)
	for _, n := range notes {
		fmt.Println(n)
	}
	// Output:
	// listen: :8080
	// routes:
	//   - match: /healthz
	//     pipeline:
	//       - text: {status: 200, body: "ok\n"}
	//   - match: /api/
	//     pipeline:
	//       - proxy: {upstreams: ['http://127.0.0.1:9000'], strip_prefix: /api, forwarded: none}
	//   - match: /
	//     pipeline:
	//       - files: /var/www/site
	// site.conf:7: directive "location": not translated: Sluice matches no regular expressions yet: write a route per path, or a prefix
}
