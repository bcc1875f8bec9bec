// Package optional runs the informers of APIs that may not be installed:
// the custom resources of another operator, Gateway API routes, an
// aggregated API. A watch declared here needs its resource (a
// group/version/resource): it starts when the resource is served, stops
// cleanly when it is no longer served, and starts again when it comes
// back, without a restart of the process and without a watch-error loop.
//
// APIs follows which resources one cluster serves. It watches
// CustomResourceDefinitions (one list and one watch for the whole
// cluster, however many resources are followed) and decides from a CRD's
// spec.versions[].served and its Established condition: a resource is
// served while its CRD exists, is established and serves the resource's
// version. A CRD being deleted still counts: the API server deletes its
// objects first, and a controller must see those deletions to remove its
// finalizers, or the CRD would never go. So a version added to a CRD later starts
// its watches, and a version no longer served stops them, like a whole
// CRD. Resources that no CRD defines (aggregated APIs, declared with
// FromDiscovery) are looked up in discovery, one request per group
// version every discovery period (WithDiscoveryPeriod), by a goroutine of
// its own so that a hung request holds back no CRD; a request that fails
// takes its resources as not served (holding back no readiness) and is
// retried sooner, backed off; nothing is polled for the others. APIs needs get, list and watch on
// customresourcedefinitions.apiextensions.k8s.io: this package carries the
// +kubebuilder:rbac marker of that rule, which apigen adds to the roles
// of every operator whose packages (-rbac-paths) import this one.
//
// Informer is the informer of one such resource. It is made anew each
// time its resource becomes served, with the function given to
// NewInformer (a typed informer of a generated factory, or a dynamic
// one), and stopped (its goroutines returned, its cache dropped) when the
// resource goes away. APIs is an informer.Factory: give it to
// operator.WithInformers, or start it and wait for it like a factory; it
// runs the Informers made on it.
//
// On binds an Informer to a queue.Controller: the handler is registered
// on every informer the Informer makes while the controller runs, the
// controller turns ready (and its workers start) with the resources that
// are served, and the keys that need the resource (chosen by a function
// of the key) are dropped, and their reconciles in flight cancelled, when
// it goes away, and queued again when it is back. In a fleet (package queue/multicluster), each member has
// its own APIs, made and added to the member with Cluster.AddInformers in
// the engage function, with its handlers added by AddEventHandler (on the
// member's Cluster.Queue): a member without the resource waits for it, and
// is not an error for the others. A MemberGate gates the fleet
// controller's keys on their member's Informer, as On does for one
// cluster: a member whose resource went away runs none of the keys that
// need it, and its reconciles of them in flight are cancelled.
//
//	apis := optional.NewAPIs(crdClient, kubeClient.Discovery())
//	widgets := optional.NewInformer(apis, widgetsGVR, func() cache.TypedSharedIndexInformer[*unstructured.Unstructured] {
//		return cache.NewTypedSharedIndexInformer[*unstructured.Unstructured](
//			dynamicinformer.NewFilteredDynamicInformer(dyn, widgetsGVR, "", 0, nil, nil).Informer())
//	})
//	if err := ctrl.Watch(optional.On(widgets, informer.EnqueueHandler[*unstructured.Unstructured](ctrl), optional.AllKeys[cache.ObjectName])); err != nil {
//		return err
//	}
//	return operator.Run(ctx, operator.WithInformers(apis), operator.WithControllers(ctrl))
package optional
