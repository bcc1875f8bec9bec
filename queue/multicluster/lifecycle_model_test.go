package multicluster_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/ctrlkit/ctrlkit/informer"
	"github.com/ctrlkit/ctrlkit/queue"
	"github.com/ctrlkit/ctrlkit/queue/multicluster"
	"github.com/ctrlkit/ctrlkit/reconcile"
)

var (
	lifecycleSeed = flag.Uint64("fleet.lifecycle.seed", 0, "replay only this seed of TestFleetLifecycle")
	lifecycleRuns = flag.Int("fleet.lifecycle.runs", 0, "seeds TestFleetLifecycle explores (0: 20, or 6 under the race detector)")
	lifecycleFrom = flag.Uint64("fleet.lifecycle.first", 1, "the first seed TestFleetLifecycle explores")
)

// The member lifecycle of a Fleet, explored by seeded random schedules:
// members join, become ready, stop answering their probes (drained and
// engaged again), rotate their credentials, leave and come back, while
// objects are created, updated and deleted in them (informer events) and
// keys are added directly, at every step; then every member answers
// again and the Fleet stops. The handlers' queue is, by seed, the
// controller itself, an informer.QueueFunc or a wrapper pointer made anew
// by each attempt's engage function, which drops the keys it gets once
// a later attempt has begun (as a queue built over that attempt's caches
// would). It checks that nothing panics, that no key added for a cluster
// that has been a member ever since is lost, nor the key of an object
// deleted after an informer of the cluster saw its latest version (also
// while the cluster was engaged again), that no key is reconciled in a
// cluster after it left, that a reconcile gets its own cluster's value,
// and that the stop lets a reconcile in flight finish. A seed fixes the schedule of steps (goroutines still interleave
// as they will): a failure names its seed, and -fleet.lifecycle.seed
// replays it.
func TestFleetLifecycle(t *testing.T) {
	if *lifecycleSeed != 0 {
		runLifecycle(t, *lifecycleSeed)
		return
	}
	runs := *lifecycleRuns
	if runs == 0 {
		runs = 20
		if raceEnabled {
			runs = 6
		}
	}
	for seed := *lifecycleFrom; seed < *lifecycleFrom+uint64(runs); seed++ {
		if !t.Run(fmt.Sprint("seed=", seed), func(t *testing.T) { runLifecycle(t, seed) }) {
			return
		}
	}
}

// lifecycleWorld is what a schedule knows of the fleet, and what it saw.
type lifecycleWorld struct {
	seed     uint64
	clusters *clusters
	seq      atomic.Uint64 // orders adds and reconciles

	mu sync.Mutex
	// member: the Provider reports the cluster (Set since the last
	// Delete); gone: it was deleted and the Fleet no longer holds it.
	member, gone map[string]bool
	// owed are the keys added while their cluster was a member, with the
	// seq of the add: each must be reconciled after it unless the
	// cluster is deleted meanwhile.
	owed []owedKey
	// started is the seq of each key's latest reconcile.
	started map[multicluster.Key]uint64
	// written is the seq of each object's latest write (create, update,
	// delete), seen that of the latest event of its key that a handler
	// got, since its cluster joined.
	written, seen map[multicluster.Key]uint64
	// attempts counts the engage calls per cluster.
	attempts   map[string]int
	violations []string
	final      chan error // the cause of the final reconcile's context at its end
}

type owedKey struct {
	key multicluster.Key
	seq uint64
}

func (w *lifecycleWorld) violate(format string, args ...any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lockedViolate(format, args...)
}

func (w *lifecycleWorld) lockedViolate(format string, args ...any) {
	w.violations = append(w.violations, fmt.Sprintf(format, args...))
}

// owe records that key was added now, if its cluster is a member.
func (w *lifecycleWorld) owe(key multicluster.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.member[key.Cluster] {
		w.owed = append(w.owed, owedKey{key: key, seq: w.seq.Add(1)})
	}
}

// write writes the object of key with do (deletes it, if deleted) and
// records the write if do succeeds. A deletion of an object whose latest
// version an informer of its member saw is owed a reconcile if settled
// (the member is ready and answers: its running informer sees it gone).
// A deletion while the member is not ready is not owed: the next
// attempt's informers list without the object and have no key for it.
func (w *lifecycleWorld) write(key multicluster.Key, deleted, settled bool, do func() error) error {
	w.mu.Lock()
	seq := w.seq.Add(1)
	owed := deleted && settled && w.member[key.Cluster] && w.seen[key] > w.written[key]
	w.mu.Unlock()
	if err := do(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if owed {
		w.owed = append(w.owed, owedKey{key: key, seq: seq})
	}
	w.written[key] = seq
	return nil
}

func (w *lifecycleWorld) reconcile(ctx context.Context, m *member, key multicluster.Key) (reconcile.Result, error) {
	seq := w.seq.Add(1)
	w.mu.Lock()
	if w.gone[key.Cluster] {
		w.lockedViolate("%s reconciled after its cluster left", key)
	}
	if m == nil || m.name != key.Cluster {
		w.lockedViolate("%s reconciled with the value of another cluster: %+v", key, m)
	}
	w.started[key] = seq
	final := w.final
	w.mu.Unlock()
	switch {
	case key.Name == "final":
		// Started before the stop, it runs on past it.
		select {
		case <-time.After(100 * time.Millisecond):
			final <- context.Cause(ctx)
		case <-ctx.Done():
			final <- context.Cause(ctx)
		}
	case key.Name == "slow-stall":
		// Takes its time to return, cancelled or not: a drain waits
		// for it with the informers still running.
		<-time.After(50 * time.Millisecond)
	case strings.HasPrefix(key.Name, "slow"):
		// Holds its cluster for a while: drains wait for it.
		select {
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
		}
	}
	return reconcile.Result{}, nil
}

// unmet returns the keys owed that were not reconciled since.
func (w *lifecycleWorld) unmet() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var keys []string
	for _, o := range w.owed {
		if w.started[o.key] < o.seq {
			keys = append(keys, o.key.String())
		}
	}
	slices.Sort(keys)
	return slices.Compact(keys)
}

// recoverQueue is the queue of a cluster's handler: it records each key
// as owed (before the controller can see it) and passes it on. A panic
// of q (which would take the process down from the informer's goroutine,
// with the Fleet's lock held) is raised again with the seed.
type recoverQueue struct {
	w       *lifecycleWorld
	cluster string
	q       informer.Queue[cache.ObjectName]
}

func (r recoverQueue) Add(name cache.ObjectName)            { r.do(name, r.q.Add) }
func (r recoverQueue) AddLowPriority(name cache.ObjectName) { r.do(name, r.q.AddLowPriority) }

func (r recoverQueue) do(name cache.ObjectName, add func(cache.ObjectName)) {
	defer func() {
		if v := recover(); v != nil {
			panic(fmt.Sprintf("seed %d (replay: -fleet.lifecycle.seed=%d): adding the key %s/%s in an informer's handler panicked: %v",
				r.w.seed, r.w.seed, r.cluster, name, v))
		}
	}()
	key := multicluster.Key{Cluster: r.cluster, ObjectName: name}
	r.w.owe(key)
	r.w.mu.Lock()
	r.w.seen[key] = r.w.seq.Add(1)
	r.w.mu.Unlock()
	add(name)
}

func runLifecycle(t *testing.T, seed uint64) {
	names := []string{"a", "b", "c"}
	w := &lifecycleWorld{seed: seed, clusters: newClusters(names...), member: map[string]bool{}, gone: map[string]bool{},
		started: map[multicluster.Key]uint64{}, written: map[multicluster.Key]uint64{}, seen: map[multicluster.Key]uint64{}, attempts: map[string]int{}, final: make(chan error, 1)}
	rnd := rand.New(rand.NewPCG(seed, 61))
	failf := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d (replay: -fleet.lifecycle.seed=%d): %s", seed, seed, fmt.Sprintf(format, args...))
	}

	p := newProvider()
	var ctrl *queue.Controller[multicluster.Key]
	engage := func(ctx context.Context, cl *multicluster.Cluster) (*member, error) {
		cms := cl.Informers.Core().V1().ConfigMaps()
		var q informer.Queue[multicluster.Key] = ctrl
		// A queue of this attempt only: it drops what it gets once a
		// later attempt has begun (after this one's informers stopped).
		w.mu.Lock()
		w.attempts[cl.Name]++
		attempt := w.attempts[cl.Name]
		w.mu.Unlock()
		add := func(k multicluster.Key) {
			w.mu.Lock()
			current := w.attempts[k.Cluster] == attempt
			w.mu.Unlock()
			if current {
				ctrl.Add(k)
			}
		}
		switch seed % 3 {
		case 1:
			q = informer.QueueFunc[multicluster.Key](add)
		case 2:
			q = &adapter{add: add}
		}
		cq := recoverQueue{w: w, cluster: cl.Name, q: cl.Queue(q)}
		if _, err := cms.TypedInformer().AddTypedEventHandler(informer.EnqueueHandler[*corev1.ConfigMap](cq), cache.HandlerOptions{}); err != nil {
			return nil, err
		}
		return &member{name: cl.Name, client: cl.Client, configMaps: cms.Lister()}, nil
	}
	fleet, err := multicluster.New("lifecycle", p, engage, multicluster.WithClients(w.clusters.newClient),
		multicluster.WithRetryBackoff(5*time.Millisecond, 20*time.Millisecond),
		multicluster.WithProbeInterval(5*time.Millisecond), multicluster.WithSyncTimeout(200*time.Millisecond))
	require.NoError(t, err)
	ctrl, err = multicluster.NewController(fleet, "lifecycle", w.reconcile, queue.WithWorkers(4), queue.WithShutdownTimeout(waitFor))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	errs := make(chan error, 2)
	go func() { errs <- fleet.Run(ctx) }()
	go func() { errs <- ctrl.Run(ctx) }()
	stopped := false
	stop := func() error {
		stopped = true
		cancel()
		var err error
		for range 2 {
			select {
			case e := <-errs:
				err = errors.Join(err, e)
			case <-time.After(waitFor):
				return errors.Join(err, errors.New("the fleet or its controller did not stop"))
			}
		}
		return err
	}
	defer func() {
		if !stopped {
			_ = stop()
		}
	}()
	var members multicluster.Members
	select {
	case members = <-p.members:
	case <-time.After(waitFor):
		failf("the provider did not run")
	}

	tokens := map[string]int{}
	config := func(name string) *rest.Config {
		cfg := w.clusters.config(name)
		cfg.BearerToken = fmt.Sprint("token-", tokens[name])
		return cfg
	}
	set := func(name string) {
		w.mu.Lock()
		w.member[name], w.gone[name] = true, false
		w.mu.Unlock()
		members.Set(name, config(name))
	}
	// poll waits up to d for cond, without failing.
	poll := func(d time.Duration, cond func() bool) bool {
		return wait.PollUntilContextTimeout(context.Background(), time.Millisecond, d, true, func(context.Context) (bool, error) {
			return cond(), nil
		}) == nil
	}
	ready := func(name string) bool { st, _ := fleet.Status(name); return st.Ready }

	for _, name := range names[:2] {
		set(name)
	}
	members.Synced()
	steps := 30 + rnd.IntN(20)
	var schedule []string
	for range steps {
		name := names[rnd.IntN(len(names))]
		w.mu.Lock()
		isMember := w.member[name]
		w.mu.Unlock()
		var step string
		switch op := rnd.IntN(100); {
		case op < 10:
			step = "join " + name
			set(name)
		case op < 18:
			step = "leave " + name
			if isMember {
				w.mu.Lock()
				w.member[name] = false
				// Keys owed in a cluster that leaves are its own.
				w.owed = slices.DeleteFunc(w.owed, func(o owedKey) bool { return o.key.Cluster == name })
				w.mu.Unlock()
				members.Delete(name)
				if poll(waitFor, func() bool { _, held := fleet.Status(name); return !held }) {
					w.mu.Lock()
					w.gone[name] = !w.member[name]
					// What its informers saw goes with it (they have
					// stopped).
					maps.DeleteFunc(w.seen, func(k multicluster.Key, _ uint64) bool { return k.Cluster == name })
					w.mu.Unlock()
				} else {
					failf("%s did not leave", name)
				}
			}
		case op < 26:
			step = "rotate " + name
			if isMember {
				// Until the old engagement has ended: the new one has
				// built its client.
				tokens[name]++
				set(name)
				token := config(name).BearerToken
				if !poll(waitFor, func() bool { return w.clusters.tokenOf(name) == token }) {
					failf("%s was not engaged with its new credentials", name)
				}
			}
		case op < 31:
			down := w.clusters.down[name]
			down.Store(!down.Load())
			step = fmt.Sprintf("%s answers: %v", name, !down.Load())
		case op < 36:
			// A member that stops answering while it reconciles: events
			// and keys come during its drain.
			step = "stall " + name
			if !isMember || !ready(name) {
				break
			}
			slow := multicluster.Key{Cluster: name, ObjectName: cacheName("app", "slow-stall")}
			w.mu.Lock()
			before := w.started[slow]
			w.mu.Unlock()
			w.owe(slow)
			ctrl.Add(slow)
			poll(time.Second, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.started[slow] > before })
			w.clusters.down[name].Store(true)
			poll(time.Second, func() bool { return !ready(name) })
			cm := configMap("app", fmt.Sprint("object-", rnd.IntN(6)), name)
			tracker := w.clusters.clients[name].Tracker()
			key := multicluster.Key{Cluster: name, ObjectName: cacheName("app", cm.Name)}
			if err := w.write(key, false, false, func() error { return tracker.Add(cm) }); err != nil {
				// During the drain: its informers may stop at once.
				_ = w.write(key, true, false, func() error { return tracker.Delete(configMaps, "app", cm.Name) })
			}
			direct := multicluster.Key{Cluster: name, ObjectName: cacheName("app", "direct-stall")}
			w.owe(direct)
			ctrl.Add(direct)
		case op < 56:
			cm := configMap("app", fmt.Sprint("object-", rnd.IntN(6)), name)
			cm.Data["n"] = fmt.Sprint(rnd.Int())
			tracker := w.clusters.clients[name].Tracker()
			key := multicluster.Key{Cluster: name, ObjectName: cacheName("app", cm.Name)}
			if err := w.write(key, false, false, func() error { return tracker.Add(cm) }); err != nil { // exists: update it
				err = w.write(key, false, false, func() error { return tracker.Update(configMaps, cm, "app") })
				require.NoError(t, err)
			}
			step = "write " + name + "/" + cm.Name
		case op < 64:
			cmName := fmt.Sprint("object-", rnd.IntN(6))
			key := multicluster.Key{Cluster: name, ObjectName: cacheName("app", cmName)}
			// Settled: ready and answering (no drain starts: this
			// goroutine makes the steps), or retried after a drain
			// whose informers have stopped.
			st, _ := fleet.Status(name)
			settled := st.Ready && !w.clusters.down[name].Load()
			_ = w.write(key, true, settled, func() error { return w.clusters.clients[name].Tracker().Delete(configMaps, "app", cmName) }) // NotFound is a step too
			step = "delete " + name + "/" + cmName
		case op < 84:
			keyName := fmt.Sprint("direct-", rnd.IntN(4))
			if rnd.IntN(3) == 0 {
				keyName = fmt.Sprint("slow-", rnd.IntN(2))
			}
			key := multicluster.Key{Cluster: name, ObjectName: cacheName("app", keyName)}
			w.owe(key)
			if rnd.IntN(4) == 0 {
				ctrl.AddLowPriority(key)
			} else {
				ctrl.Add(key)
			}
			step = "add " + key.String()
		default:
			// Let the fleet move on: until name is ready or down, up to
			// a bound.
			step = "wait for " + name
			if isMember && !w.clusters.down[name].Load() {
				poll(time.Duration(1+rnd.IntN(200))*time.Millisecond, func() bool { return ready(name) })
			}
		}
		schedule = append(schedule, step)
		w.mu.Lock()
		violations := slices.Clone(w.violations)
		w.mu.Unlock()
		if len(violations) > 0 {
			failf("after %q: %s", strings.Join(schedule, "; "), strings.Join(violations, "; "))
		}
	}

	// Every member answers again: every key owed is reconciled.
	for _, name := range names {
		w.clusters.down[name].Store(false)
	}
	var current []string
	w.mu.Lock()
	for _, name := range names {
		if w.member[name] {
			current = append(current, name)
		}
	}
	w.mu.Unlock()
	for _, name := range current {
		if !poll(waitFor, func() bool { return ready(name) }) {
			st, _ := fleet.Status(name)
			failf("%s not ready again: %+v", name, st)
		}
	}
	if !poll(waitFor, func() bool { return len(w.unmet()) == 0 }) {
		failf("keys lost after %q: %v", strings.Join(schedule, "; "), w.unmet())
	}

	// The stop lets a reconcile in flight finish.
	if len(current) > 0 {
		ctrl.Add(multicluster.Key{Cluster: current[0], ObjectName: cacheName("app", "final")})
		key := multicluster.Key{Cluster: current[0], ObjectName: cacheName("app", "final")}
		if !poll(waitFor, func() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.started[key] > 0 }) {
			failf("the final key was not reconciled")
		}
	}
	if err := stop(); err != nil {
		failf("stop: %v", err)
	}
	if len(current) > 0 {
		if cause := <-w.final; cause != nil {
			failf("the stop cancelled a reconcile in flight: %v", cause)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.violations) > 0 {
		failf("after %q: %s", strings.Join(schedule, "; "), strings.Join(w.violations, "; "))
	}
}
