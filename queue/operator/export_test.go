package operator

// Helpers of the internal tests that the external tests share.
var (
	FreeAddr = freeAddr
	Get      = get
)
