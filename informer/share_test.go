package informer

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
)

// What sharedValues remembers stays bounded whatever it meets, and a value
// met again and again stays shared among values met once.
func TestSharedValuesStayBounded(t *testing.T) {
	s := newSharedValues()
	first := s.string(strings.Clone("default"))
	for i := range 10 * sharedGeneration {
		assert.Equal(t, strconv.Itoa(i), s.string(strconv.Itoa(i)))
		if i%(sharedGeneration/2) == 0 {
			assert.Same(t, unsafe.StringData(first), unsafe.StringData(s.string(strings.Clone("default"))), "after %d others", i)
		}
		assert.LessOrEqual(t, len(s.cur)+len(s.prev), 2*sharedGeneration)
	}
	long := strings.Repeat("x", maxSharedString+1)
	assert.Same(t, unsafe.StringData(long), unsafe.StringData(s.string(long)), "a long string is not remembered")
	assert.Empty(t, s.string(""))
}
