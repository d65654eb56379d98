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
    location @fallback { return 404; }
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
	//   - match: ~ \.php$
	//     pipeline:
	//       - ipfilter: {deny: [all]}
	//       - files: /var/www/site
	//   - match: /
	//     pipeline:
	//       - files: /var/www/site
	// site.conf:8: directive "location": not translated: a named location is reached only by try_files, error_page or a rewrite, which Sluice does not translate
}
