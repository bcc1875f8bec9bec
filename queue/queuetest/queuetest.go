// Package queuetest runs controllers in tests: Start runs one (or, with
// All, several) as
// operator.Run would, over informer factories of fake clientsets typically,
// for the rest of a test, WaitIdle waits until it has nothing left to do,
// and Advance moves the fake clock of a controller that waits for time
// (RequeueAfter, backoff, Periodic sources) and runs what falls due.
//
//	kube := fake.NewClientset()
//	reconciletest.Strict(kube) // 409 on stale updates, as a real API server
//	factory := informers.NewSharedInformerFactory(kube, 0)
//	ctrl := newMirror(t, kube, factory) // a *queue.Controller, or one embedding it
//	queuetest.Start(t, ctrl, operator.WithInformers(factory))
//	queuetest.WaitIdle(t, ctrl, kube)
//	// assert on the objects in kube
//
// An operator wired on operator.Flags names its factories once, with
// operator.Informers, and a test that shares its wiring runs it with the
// same options as main: queuetest.Start(t, ctrl, flags.Options(kube)...).
//
// A fleet operator (package queue/multicluster) is run with StartFleet:
// the test reports the members with a Provider, gives each a fake
// clientset with multicluster.WithClients, and StartFleet runs the Fleet
// and its controllers until the test ends, returning once the members
// reported before were engaged (or failed to be):
//
//	var provider queuetest.Provider
//	provider.Set("east", &rest.Config{Host: "https://east"})
//	provider.Synced()
//	fleet, err := multicluster.New("copier", &provider, engage, multicluster.WithClients(fakeClients))
//	require.NoError(t, err)
//	ctrl, err := multicluster.NewController(fleet, "copier", reconcileCopy)
//	require.NoError(t, err)
//	queuetest.StartFleet(t, fleet, []queuetest.Controller{ctrl}, operator.WithInformers(hubInformers))
//	queuetest.WaitIdle(t, ctrl, hub, east)
package queuetest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/ctrlkit/ctrlkit/queue/operator"
	"github.com/ctrlkit/ctrlkit/reconcile/reconciletest"
)

// Controller is what Start runs and WaitIdle watches: a *queue.Controller,
// or a type that embeds one.
type Controller interface {
	Run(ctx context.Context) error
	HasSynced() bool
	// Len is the number of keys waiting to be reconciled now.
	Len() int
	// Active is the number of reconciles running.
	Active() int
	// Retrying is the number of keys waiting for a retry after a failed
	// reconcile.
	Retrying() int
}

// Timeout bounds every wait of this package.
const Timeout = 30 * time.Second

// Start runs ctrl in the background with operator.Run and opts (the
// informer factories, typically: operator.WithInformers, or the options of
// operator.Flags), with a logger that writes through t, and returns once
// Run is under way: for a controller with a Running method, such as
// *queue.Controller and a type embedding one, once Running reports true
// (its handlers registered and synced, its workers started; HasSynced
// alone reports on the informers before Run), for another once
// ctrl.HasSynced. The test can thus end right after Start, and WaitIdle
// after it waits for the keys of the objects that existed. When the test ends, Run is stopped and waited for (an
// error from it fails the test); it stops ctrl and shuts the informers
// down. It fails the test if ctrl does not sync within Timeout, and at
// once if Run returns before. StartFleet runs a multicluster.Fleet with
// its controllers.
//
// Several controllers, such as an operator's, are given as one with All:
// Start runs each, and returns once every one is under way.
func Start(t testing.TB, ctrl Controller, opts ...operator.Option) {
	t.Helper()
	ctrls := []Controller{ctrl}
	if g, ok := ctrl.(group); ok {
		ctrls = g
	}
	run := make([]operator.Controller, len(ctrls))
	for i, c := range ctrls {
		run[i] = c
	}
	start(t, "the controller to sync", run, opts, func() (bool, string) {
		for i, c := range ctrls {
			if r, ok := c.(running); ok && !r.Running() {
				return false, fmt.Sprintf("Run of controller %d not under way", i)
			}
			if !c.HasSynced() {
				return false, fmt.Sprintf("controller %d not synced", i)
			}
		}
		return true, ""
	})
}

// All returns ctrls as one Controller, for a test of several controllers
// that act on each other's writes, as an operator's do. Start runs each of
// them with operator.Run, as operator.WithControllers(ctrls...) would, and
// returns once every one is under way; WaitIdle waits until none has
// anything to do. Given to operator.Run itself, it runs them all until ctx
// ends, and returns their errors.
//
//	ctrls := queuetest.All(mirror, labeler)
//	queuetest.Start(t, ctrls, operator.WithInformers(factory))
//	queuetest.WaitIdle(t, ctrls, kube)
func All(ctrls ...Controller) Controller { return group(ctrls) }

// group is the Controller of All.
type group []Controller

// Run runs every controller until ctx ends or one of them fails, which
// stops the others, and returns the errors of all.
func (g group) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, len(g))
	for _, c := range g {
		go func() {
			err := c.Run(ctx)
			if err != nil {
				cancel()
			}
			errs <- err
		}()
	}
	var all []error
	for range g {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}

// HasSynced reports whether every controller has synced.
func (g group) HasSynced() bool {
	for _, c := range g {
		if !c.HasSynced() {
			return false
		}
	}
	return true
}

// Len is the sum of the controllers' Len.
func (g group) Len() int { return g.sum(Controller.Len) }

// Active is the sum of the controllers' Active.
func (g group) Active() int { return g.sum(Controller.Active) }

// Retrying is the sum of the controllers' Retrying.
func (g group) Retrying() int { return g.sum(Controller.Retrying) }

func (g group) sum(count func(Controller) int) int {
	n := 0
	for _, c := range g {
		n += count(c)
	}
	return n
}

// running is a Controller that tells when its Run is under way, as
// *queue.Controller does.
type running interface {
	Running() bool
}

// start runs ctrls with operator.Run and opts for the rest of the test,
// and returns once synced reports true; what names what it waits for.
func start(t testing.TB, what string, ctrls []operator.Controller, opts []operator.Option, synced func() (bool, string)) {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- operator.Run(ctx, append(opts, operator.WithControllers(ctrls...))...) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("controller: Run: %v", err)
			}
		case <-time.After(Timeout):
			t.Errorf("controller: Run did not return within %s of the end of the test", Timeout)
		}
	})
	waitUntil(t, what, func() (bool, string, bool) {
		select {
		case err := <-done:
			done <- err
			return false, fmt.Sprintf("Run returned early: %v", err), true
		default:
		}
		ok, report := synced()
		return ok, report, false
	})
}

// Quiet is how long WaitIdle requires nothing to happen.
const Quiet = 50 * time.Millisecond

// WaitIdle waits until ctrl has nothing to do: no key waits, no key waits
// for a retry after a failed reconcile (however long its backoff), no
// reconcile runs, and neither the controller nor any of the clients has
// done anything for Quiet, so that the events of the controller's last
// writes have reached its informers and handlers. Fake clientsets deliver
// events within microseconds; Quiet is a wide margin for that, not a sleep
// the test depends on. It fails the test if ctrl is not idle within
// Timeout, which is how a key that keeps failing shows.
//
// Keys delayed on purpose (AddAfter, Result.RequeueAfter) are not waited
// for: a controller that polls something every minute is idle between two
// polls. A test of such a controller gives it a fake clock
// (queue.WithClock) and moves it with Advance.
func WaitIdle(t testing.TB, ctrl Controller, clients ...reconciletest.ActionRecorder) {
	t.Helper()
	// The counts are read in the order a key moves (retry, waiting,
	// running), so that a key moving on while they are read is seen at
	// least once.
	waitQuiet(t, "the controller to be idle", clients, func() (bool, string) {
		retrying, waiting, active := ctrl.Retrying(), ctrl.Len(), ctrl.Active()
		return retrying > 0 || waiting > 0 || active > 0,
			fmt.Sprintf("%d keys waiting, %d waiting for a retry, %d reconciles running", waiting, retrying, active)
	})
}

// waitQuiet waits until busy reports nothing to do and the clients saw no
// new request, from one poll to another at least Quiet later with no busy
// poll between them.
func waitQuiet(t testing.TB, what string, clients []reconciletest.ActionRecorder, busy func() (bool, string)) {
	t.Helper()
	var (
		idleSince time.Time
		actions   = -1
	)
	waitFor(t, what, func() (bool, string) {
		n := 0
		for _, c := range clients {
			n += len(c.Actions())
		}
		if isBusy, report := busy(); isBusy || n != actions {
			idleSince, actions = time.Time{}, n
			return false, fmt.Sprintf("%s, %d requests", report, n)
		}
		if idleSince.IsZero() {
			idleSince = time.Now()
		}
		return time.Since(idleSince) >= Quiet, "settling"
	})
}

// waitFor polls cond until it holds, failing the test after Timeout with
// cond's last report.
func waitFor(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	waitUntil(t, what, func() (bool, string, bool) {
		ok, report := cond()
		return ok, report, false
	})
}

// waitUntil is waitFor with a cond that can also give up at once (stop):
// it fails the test with cond's report then.
func waitUntil(t testing.TB, what string, cond func() (ok bool, report string, stop bool)) {
	t.Helper()
	deadline := time.Now().Add(Timeout)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		ok, report, stop := cond()
		if ok {
			return
		}
		if stop {
			t.Fatalf("gave up waiting for %s: %s", what, report)
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s: %s", Timeout, what, report)
			return
		}
		<-tick.C
	}
}

// Clocked is a Controller given a fake clock with queue.WithClock: NextDue
// says when it next adds keys by itself (*queue.Controller has it).
type Clocked interface {
	Controller
	NextDue() (time.Time, bool)
}

// maxSteps bounds the due times one Advance stops at: more means a
// controller that keeps asking to run again at once.
const maxSteps = 10_000

// Advance moves clk, the fake clock (k8s.io/utils/clock/testing) that ctrl
// was given with queue.WithClock, forward by d as time would pass: it stops
// at each time in between at which ctrl has something due (a key's
// RequeueAfter or AddAfter, the retry of a failed reconcile after its
// backoff, the tick of a Periodic source), in order, and at each waits
// until ctrl has added and reconciled all that was due and is idle, as
// WaitIdle does; then it sets clk to the end and waits the same. Keys due
// later wait, and do not keep ctrl from being idle. Advance(t, ctrl, clk,
// 0) only waits: use it instead of WaitIdle for a controller on a fake
// clock, whose retries wait for the clock. It fails the test on a wait
// longer than Timeout, or a negative d. The controller's reconciler reads
// the time from clk too, if it reads it.
//
//	clk := clocktesting.NewFakeClock(time.Now())
//	ctrl, err := newExpiry(kube, factory, clk, queue.WithClock(clk))
//	require.NoError(t, err)
//	queuetest.Start(t, ctrl, operator.WithInformers(factory))
//	queuetest.Advance(t, ctrl, clk, time.Hour, kube) // what is due within the hour runs, in order
func Advance(t testing.TB, ctrl Clocked, clk *clocktesting.FakeClock, d time.Duration, clients ...reconciletest.ActionRecorder) {
	t.Helper()
	if d < 0 {
		t.Fatalf("queuetest.Advance: negative duration %s", d)
		return
	}
	end := clk.Now().Add(d)
	settle(t, ctrl, clk, clients)
	for steps := 0; ; steps++ {
		due, ok := ctrl.NextDue()
		if !ok || due.After(end) {
			break
		}
		if steps == maxSteps {
			t.Fatalf("queuetest.Advance: more than %d due times before %s: the controller keeps asking to run again", maxSteps, end)
			return
		}
		if due.After(clk.Now()) {
			clk.SetTime(due)
		}
		settle(t, ctrl, clk, clients)
	}
	clk.SetTime(end)
	settle(t, ctrl, clk, clients)
}

// settle waits until ctrl has nothing due on clk, no key waiting and no
// reconcile running, and the clients saw no request, for Quiet.
func settle(t testing.TB, ctrl Clocked, clk *clocktesting.FakeClock, clients []reconciletest.ActionRecorder) {
	t.Helper()
	// Read in the order a key moves: due, waiting, running.
	waitQuiet(t, "the controller to be idle at "+clk.Now().Format(time.RFC3339Nano), clients, func() (bool, string) {
		due, pending := ctrl.NextDue()
		dueNow := pending && !due.After(clk.Now())
		waiting, active := ctrl.Len(), ctrl.Active()
		return dueNow || waiting > 0 || active > 0, fmt.Sprintf("due now: %t, %d keys waiting, %d reconciles running", dueNow, waiting, active)
	})
}
