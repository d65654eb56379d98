package controller

import (
	"context"
	"errors"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Election configures leader election among the controllers of several
// data planes (one controller beside each), by a Lease: every controller
// configures its own data plane, and only the leader writes the status.
type Election struct {
	// Namespace and Name name the Lease (required).
	Namespace, Name string
	// Identity is this controller's name in the Lease (required; the
	// pod's name).
	Identity string
	// LeaseDuration, RenewDeadline and RetryPeriod are client-go's
	// (defaults 15s, 10s, 2s).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// RunElected runs the controller as Run does, writing status only while
// it holds the Lease, and stands for election again whenever it loses
// it. It returns when ctx is done, once the Lease is released.
func (c *Controller) RunElected(ctx context.Context, e Election) error {
	if e.Namespace == "" || e.Name == "" || e.Identity == "" {
		return errors.New("controller: an election needs the Lease's namespace and name and an identity")
	}
	lock := &resourcelock.LeaseLock{
		LeaseMeta:  metav1.ObjectMeta{Namespace: e.Namespace, Name: e.Name},
		Client:     c.cfg.Kube.CoordinationV1(),
		LockConfig: resourcelock.ResourceLockConfig{Identity: e.Identity},
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   orDuration(e.LeaseDuration, 15*time.Second),
		RenewDeadline:   orDuration(e.RenewDeadline, 10*time.Second),
		RetryPeriod:     orDuration(e.RetryPeriod, 2*time.Second),
		ReleaseOnCancel: true,
		Name:            e.Name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) {
				c.log.Info("gateway controller: leading: writing status", "lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
				c.setLeading(true)
				c.Kick()
			},
			OnStoppedLeading: func() {
				c.log.Info("gateway controller: not leading: writing no status", "lease", e.Namespace+"/"+e.Name, "identity", e.Identity)
				c.setLeading(false)
			},
		},
	})
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.elected = true
	c.mu.Unlock()
	elections := make(chan struct{})
	go func() {
		defer close(elections)
		for ctx.Err() == nil {
			le.Run(ctx) // returns when the lease is lost, or released at the end
		}
	}()
	err = c.Run(ctx)
	<-elections
	return err
}

func (c *Controller) setLeading(on bool) {
	c.mu.Lock()
	c.stats.Leading = on
	c.mu.Unlock()
}

func orDuration(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
