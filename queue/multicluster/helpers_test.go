package multicluster_test

import "k8s.io/client-go/tools/cache"

func cacheName(namespace, name string) cache.ObjectName { return cache.NewObjectName(namespace, name) }
