package translate_test

import (
	"fmt"
	"net/netip"

	"github.com/sluice-server/sluice/gateway/translate"
)

const example = `
apiVersion: gateway.networking.k8s.io/v1
kind: GatewayClass
metadata: {name: sluice}
spec: {controllerName: example.com/sluice}
---
apiVersion: gateway.networking.k8s.io/v1
kind: Gateway
metadata: {name: web, namespace: default}
spec:
  gatewayClassName: sluice
  listeners: [{name: http, port: 80, protocol: HTTP}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata: {name: app, namespace: default}
spec:
  parentRefs: [{name: web}]
  hostnames: [app.example.com]
  rules:
    - matches: [{path: {type: PathPrefix, value: /api}}]
      backendRefs: [{name: api, port: 80}]
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: default}
spec: {ports: [{name: http, port: 80, targetPort: 8080}]}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: api-x1, namespace: default, labels: {kubernetes.io/service-name: api}}
addressType: IPv4
ports: [{name: http, port: 8080}]
endpoints:
  - addresses: [10.244.0.7]
  - addresses: [10.244.0.8]
    conditions: {ready: false}
`

func ExampleTranslate() {
	snap, err := translate.Decode([]byte(example))
	if err != nil {
		panic(err)
	}
	res := translate.Translate(snap, translate.Options{
		ControllerName: "example.com/sluice",
		AddressPool:    netip.MustParsePrefix("10.245.0.0/24"),
		AdminSocket:    "/run/sluice/admin.sock",
	})
	fmt.Printf("%s", res.Config)
	fmt.Println(res.Upstreams)
	// Output:
	// admin:
	//     socket: /run/sluice/admin.sock
	// listen:
	//     - address: 10.245.0.1:80
	//       h2c: true
	// sites:
	//     - hosts:
	//         - app.example.com
	//       routes:
	//         - match:
	//             - /api
	//             - /api/
	//           local:
	//             - 10.245.0.1:80
	//           pipeline:
	//             - proxy:
	//                 name: default.app.r0.0
	//                 upstreams:
	//                     - http://10.244.0.7:8080
	// routes:
	//     - match: /
	//       pipeline:
	//         - text:
	//             body: |
	//                 no route for this request
	//             status: 404
	// map[default.app.r0.0:[{http://10.244.0.7:8080 0}]]
}
