package queue

// PendingTriggers counts the keys whose triggers c keeps for their next
// reconcile.
func PendingTriggers[K comparable](c *Controller[K]) int {
	c.triggerMu.Lock()
	defer c.triggerMu.Unlock()
	return len(c.triggers)
}
