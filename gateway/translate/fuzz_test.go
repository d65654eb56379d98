package translate_test

import (
	"testing"

	"github.com/sluice-server/sluice/gateway/translate"
)

// Whatever manifests decode, the config translated from them loads.
func FuzzTranslate(f *testing.F) {
	f.Add([]byte(example))
	f.Add([]byte(route("infra", "r", sameNS, `
  hostnames: ["*.example.com", a.example.com]
  rules:
    - matches: [{path: {type: Exact, value: /a/}, method: GET, headers: [{name: x, value: "~ y"}], queryParams: [{name: q, value: "*"}]}]
      filters: [{type: RequestRedirect, requestRedirect: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /b}}}]
    - matches: [{path: {type: RegularExpression, value: "/x/[0-9]+"}}]
      filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: "/$1"}}}]
      backendRefs: [{name: v1, port: 8080}]`)))
	f.Add([]byte(grpcRoute("infra", "g", sameNS, `
  hostnames: [grpc.example.com]
  rules:
    - matches: [{method: {type: RegularExpression, service: "a.*", method: "B|C"}, headers: [{type: RegularExpression, name: x, value: "y+"}]}]
      filters: [{type: RequestHeaderModifier, requestHeaderModifier: {set: [{name: x, value: z}]}}]
      backendRefs: [{name: v1, port: 8080}]
    - matches: [{method: {service: a.B}}, {method: {method: M}}]`)))
	f.Fuzz(func(t *testing.T, manifests []byte) {
		snap, err := translate.Decode(append([]byte(base+"\n---\n"), manifests...))
		if err != nil {
			return
		}
		res := translate.Translate(snap, opts)
		load(t, res)
	})
}
