package controller

import (
	"context"
	"errors"
	"reflect"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/sluice-server/sluice/gateway/translate"
)

// mergeConditions returns want with each condition's LastTransitionTime
// taken from the condition of its type in have when its status is the
// same, and now otherwise.
func mergeConditions(have, want []metav1.Condition, now metav1.Time) []metav1.Condition {
	out := make([]metav1.Condition, len(want))
	for i, w := range want {
		w.LastTransitionTime = now
		for _, h := range have {
			if h.Type == w.Type && h.Status == w.Status {
				w.LastTransitionTime = h.LastTransitionTime
			}
		}
		out[i] = w
	}
	return out
}

// writeStatus writes the status res gives every object this controller
// owns, where it differs from the object's. When applyErr is not nil the
// data plane does not serve res, and the Gateways say so.
func (c *Controller) writeStatus(ctx context.Context, res *translate.Result, applyErr error) error {
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	var errs []error
	wrote := 0

	classes, _ := c.gwF.Gateway().V1().GatewayClasses().Lister().List(labels.Everything())
	for _, gc := range classes {
		want, ok := res.GatewayClasses[gc.Name]
		if !ok {
			continue
		}
		st := gc.Status
		st.Conditions = mergeConditions(gc.Status.Conditions, want.Conditions, now)
		st.SupportedFeatures = want.SupportedFeatures
		if equality.Semantic.DeepEqual(st, gc.Status) {
			continue
		}
		x := gc.DeepCopy()
		x.Status = st
		if _, err := c.cfg.Gateway.GatewayV1().GatewayClasses().UpdateStatus(ctx, x, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			wrote++
		}
	}

	gws, _ := c.gwF.Gateway().V1().Gateways().Lister().List(labels.Everything())
	for _, g := range gws {
		want, ok := res.Gateways[types.NamespacedName{Namespace: g.Namespace, Name: g.Name}]
		if !ok {
			continue
		}
		want = *want.DeepCopy()
		if applyErr != nil {
			for i, cd := range want.Conditions {
				if cd.Type == string(gatewayv1.GatewayConditionProgrammed) && cd.Status == metav1.ConditionTrue {
					want.Conditions[i] = metav1.Condition{Type: cd.Type, Status: metav1.ConditionFalse, Reason: string(gatewayv1.GatewayReasonPending), Message: "the data plane has not loaded the config: " + applyErr.Error(), ObservedGeneration: cd.ObservedGeneration}
				}
			}
		}
		st := want
		st.Conditions = mergeConditions(g.Status.Conditions, want.Conditions, now)
		for i, l := range st.Listeners {
			var have []metav1.Condition
			for _, hl := range g.Status.Listeners {
				if hl.Name == l.Name {
					have = hl.Conditions
				}
			}
			st.Listeners[i].Conditions = mergeConditions(have, l.Conditions, now)
		}
		st.AttachedListenerSets = g.Status.AttachedListenerSets
		if equality.Semantic.DeepEqual(st, g.Status) {
			continue
		}
		x := g.DeepCopy()
		x.Status = st
		if _, err := c.cfg.Gateway.GatewayV1().Gateways(g.Namespace).UpdateStatus(ctx, x, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			wrote++
		}
	}

	routes, _ := c.gwF.Gateway().V1().HTTPRoutes().Lister().List(labels.Everything())
	for _, r := range routes {
		parents, changed := c.routeParents(r.Status.Parents, res.HTTPRoutes[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}].Parents, now)
		if !changed {
			continue
		}
		x := r.DeepCopy()
		x.Status.Parents = parents
		if _, err := c.cfg.Gateway.GatewayV1().HTTPRoutes(r.Namespace).UpdateStatus(ctx, x, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			wrote++
		}
	}
	grpcRoutes, _ := c.gwF.Gateway().V1().GRPCRoutes().Lister().List(labels.Everything())
	for _, r := range grpcRoutes {
		parents, changed := c.routeParents(r.Status.Parents, res.GRPCRoutes[types.NamespacedName{Namespace: r.Namespace, Name: r.Name}].Parents, now)
		if !changed {
			continue
		}
		x := r.DeepCopy()
		x.Status.Parents = parents
		if _, err := c.cfg.Gateway.GatewayV1().GRPCRoutes(r.Namespace).UpdateStatus(ctx, x, metav1.UpdateOptions{}); err != nil {
			errs = append(errs, err)
		} else {
			wrote++
		}
	}
	c.mu.Lock()
	c.stats.StatusWrites += wrote
	c.mu.Unlock()
	return errors.Join(errs...)
}

// routeParents returns the parent statuses a route should have, given
// those it has and those the translation wants for this controller's
// parents (other controllers' entries are kept, ours' conditions merged
// to keep lastTransitionTime), and whether they differ from those it has.
func (c *Controller) routeParents(have, want []gatewayv1.RouteParentStatus, now metav1.Time) ([]gatewayv1.RouteParentStatus, bool) {
	ours := gatewayv1.GatewayController(c.cfg.Options.ControllerName)
	parents := []gatewayv1.RouteParentStatus{}
	for _, p := range have {
		if p.ControllerName != ours {
			parents = append(parents, p) // another controller's
		}
	}
	for _, p := range want {
		var conds []metav1.Condition
		for _, hp := range have {
			if hp.ControllerName == ours && reflect.DeepEqual(hp.ParentRef, p.ParentRef) {
				conds = hp.Conditions
			}
		}
		p.Conditions = mergeConditions(conds, p.Conditions, now)
		parents = append(parents, p)
	}
	if len(parents) == len(have) && equality.Semantic.DeepEqual(parents, have) || len(parents) == 0 && len(have) == 0 {
		return nil, false
	}
	return parents, true
}
