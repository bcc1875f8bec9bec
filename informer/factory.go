package informer

import "reflect"

// Factory is what client-go's and code-generator's shared informer
// factories have in common: what package operator runs and what the test
// helpers of queuetest and reconciletest start.
type Factory interface {
	Start(stopCh <-chan struct{})
	WaitForCacheSync(stopCh <-chan struct{}) map[reflect.Type]bool
	Shutdown()
}
