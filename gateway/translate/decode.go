package translate

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1beta1 "sigs.k8s.io/gateway-api/apis/v1beta1"
)

var decoder = func() runtime.Decoder {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, discoveryv1.AddToScheme, gatewayv1.Install, gatewayv1beta1.Install} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return serializer.NewCodecFactory(s).UniversalDeserializer()
}()

// Decode reads Kubernetes manifests (YAML documents separated by ---, or
// JSON) into a Snapshot: the kinds a Snapshot holds, of API versions v1
// (core, gateway.networking.k8s.io), discovery.k8s.io/v1 and
// gateway.networking.k8s.io/v1beta1 (ReferenceGrant). Empty documents are
// skipped; a document of another kind, or one that does not decode, is an
// error naming its place among the documents.
func Decode(manifests []byte) (*Snapshot, error) {
	snap := &Snapshot{}
	r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	for n := 1; ; n++ {
		var raw runtime.RawExtension
		if err := r.Decode(&raw); err != nil {
			if errors.Is(err, io.EOF) {
				return snap, nil
			}
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		if len(bytes.TrimSpace(raw.Raw)) == 0 || bytes.Equal(bytes.TrimSpace(raw.Raw), []byte("null")) {
			continue
		}
		obj, _, err := decoder.Decode(raw.Raw, nil, nil)
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", n, err)
		}
		switch o := obj.(type) {
		case *gatewayv1.GatewayClass:
			snap.GatewayClasses = append(snap.GatewayClasses, o)
		case *gatewayv1.Gateway:
			snap.Gateways = append(snap.Gateways, o)
		case *gatewayv1.HTTPRoute:
			snap.HTTPRoutes = append(snap.HTTPRoutes, o)
		case *gatewayv1.GRPCRoute:
			snap.GRPCRoutes = append(snap.GRPCRoutes, o)
		case *gatewayv1.ReferenceGrant:
			snap.ReferenceGrants = append(snap.ReferenceGrants, o)
		case *gatewayv1beta1.ReferenceGrant:
			snap.ReferenceGrants = append(snap.ReferenceGrants, &gatewayv1.ReferenceGrant{ObjectMeta: o.ObjectMeta, Spec: gatewayv1.ReferenceGrantSpec{From: o.Spec.From, To: o.Spec.To}})
		case *corev1.Namespace:
			snap.Namespaces = append(snap.Namespaces, o)
		case *corev1.Service:
			snap.Services = append(snap.Services, o)
		case *discoveryv1.EndpointSlice:
			snap.EndpointSlices = append(snap.EndpointSlices, o)
		case *corev1.Secret:
			snap.Secrets = append(snap.Secrets, o)
		default:
			return nil, fmt.Errorf("document %d: a %T is not an object a Snapshot holds", n, obj)
		}
	}
}
