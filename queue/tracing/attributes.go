package tracing

import (
	"strings"

	"go.opentelemetry.io/otel/attribute"
)

// The attributes of a reconcile's span. docs/tracing.md says what each
// one means.
const (
	// AttrController is the controller's name.
	AttrController attribute.Key = "ctrlkit.controller"
	// AttrKey is the key, as its String method (or fmt) writes it.
	AttrKey attribute.Key = "ctrlkit.key"
	// AttrCluster is the member cluster of a fleet key.
	AttrCluster attribute.Key = "ctrlkit.cluster"
	// AttrAttempt counts the reconciles of the key since its last one
	// that did not fail: 1 for the first, 2 for the first retry, ...
	AttrAttempt attribute.Key = "ctrlkit.attempt"
	// AttrResult is how the reconcile ended: one of the Result values.
	AttrResult attribute.Key = "ctrlkit.result"
	// AttrRequeue is true when the key is queued again with the backoff of
	// a failure (or of a cache behind the controller's own write).
	AttrRequeue attribute.Key = "ctrlkit.requeue"
	// AttrRequeueAfter is the delay the reconcile asked for with
	// Result.RequeueAfter, as a Go duration ("30s").
	AttrRequeueAfter attribute.Key = "ctrlkit.requeue_after"
	// AttrWrote is whether the reconcile sent a write to the API server
	// (see MarkWrite).
	AttrWrote attribute.Key = "ctrlkit.wrote"
	// AttrTriggers counts the triggers recorded for the reconcile;
	// AttrTriggersDropped those beyond MaxTriggers, which have no link
	// (see MaxTriggers for which are kept).
	AttrTriggers        attribute.Key = "ctrlkit.triggers"
	AttrTriggersDropped attribute.Key = "ctrlkit.triggers.dropped"
	// The attributes of a trigger: on each link, and those of the latest
	// trigger on the span itself.
	AttrTriggerEvent           attribute.Key = "ctrlkit.trigger.event"
	AttrTriggerSource          attribute.Key = "ctrlkit.trigger.source"
	AttrTriggerObject          attribute.Key = "ctrlkit.trigger.object"
	AttrTriggerResourceVersion attribute.Key = "ctrlkit.trigger.resource_version"
)

// The values of AttrResult.
const (
	// ResultSuccess: done, nothing to do until the next trigger.
	ResultSuccess = "success"
	// ResultRequeueAfter: done, run again after Result.RequeueAfter.
	ResultRequeueAfter = "requeue-after"
	// ResultStale: the cache was behind the controller's own write;
	// queued again.
	ResultStale = "stale-cache"
	// ResultError: failed, retried with backoff.
	ResultError = "error"
	// ResultTerminal: failed with a terminal error, not retried.
	ResultTerminal = "terminal"
	// ResultCancelled: the stop or the key's move to another replica
	// cancelled it.
	ResultCancelled = "cancelled"
)

// Attributes returns the attributes of t, those of AttrTriggerEvent and
// its siblings, leaving out the empty ones; bytes of its strings that are
// not valid UTF-8 are replaced by U+FFFD (OTLP's strings must be UTF-8).
func (t Trigger) Attributes() []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 4)
	if t.Event != "" {
		attrs = append(attrs, AttrTriggerEvent.String(strings.ToValidUTF8(string(t.Event), "\uFFFD")))
	}
	if t.Source != "" {
		attrs = append(attrs, AttrTriggerSource.String(strings.ToValidUTF8(string(t.Source), "\uFFFD")))
	}
	if t.Object != "" {
		attrs = append(attrs, AttrTriggerObject.String(strings.ToValidUTF8(t.Object, "\uFFFD")))
	}
	if t.ResourceVersion != "" {
		attrs = append(attrs, AttrTriggerResourceVersion.String(strings.ToValidUTF8(t.ResourceVersion, "\uFFFD")))
	}
	return attrs
}

// ClusterKey is implemented by the keys of a fleet's member clusters
// (multicluster.Key): a reconcile's span names the key's cluster in
// AttrCluster.
type ClusterKey interface {
	ClusterName() string
}
