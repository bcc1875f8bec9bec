package informer

import (
	"encoding/binary"
	"math"
	"reflect"
	"sync"
)

// sharedGeneration is how many values one generation of a sharedValues
// remembers.
const sharedGeneration = 1024

// maxSharedString is the longest string a sharedValues remembers.
const maxSharedString = 256

// sharedValues stores equal values once: the trimmed objects of one
// informer share the strings, lists and pointers their kept fields have in
// common (the namespace, the owners' API version and kind, the containers
// of the replicas of one template), which is safe because cached objects
// are never modified. It remembers the values of its current and previous
// generation, each of at most sharedGeneration entries: a value met again
// before two generations have filled is shared, a value met once is soon
// forgotten, and what it holds stays bounded whatever the objects hold.
type sharedValues struct {
	mu        sync.Mutex
	cur, prev map[string]any
}

func newSharedValues() *sharedValues {
	return &sharedValues{cur: map[string]any{}}
}

// value returns the value remembered under key, or remembers and returns
// v() when there is none.
func (s *sharedValues) value(key []byte, v func() any) any {
	s.mu.Lock()
	defer s.mu.Unlock()
	if found, ok := s.cur[string(key)]; ok {
		return found
	}
	found, ok := s.prev[string(key)]
	if !ok {
		found = v()
	}
	if len(s.cur) >= sharedGeneration {
		s.prev, s.cur = s.cur, make(map[string]any, sharedGeneration)
	}
	s.cur[string(key)] = found
	return found
}

// string returns a string equal to str, shared with the objects that met
// an equal one before.
func (s *sharedValues) string(str string) string {
	if str == "" || len(str) > maxSharedString {
		return str
	}
	var buf [maxSharedString + 1]byte
	key := append(append(buf[:0], 's'), str...)
	return s.value(key, func() any { return str }).(string)
}

// share sets dst, a copy of a kept value, to the equal value met before if
// there is one. Strings, and lists and pointers of strings, numbers and
// booleans (and of structs of which k keeps only such fields), are shared;
// maps and structs kept whole are not.
func (s *sharedValues) share(k *keptField, dst reflect.Value) {
	switch dst.Kind() {
	case reflect.String:
		dst.SetString(s.string(dst.String()))
	case reflect.Slice, reflect.Pointer:
		if dst.IsNil() {
			return
		}
		var buf [128]byte
		key, ok := k.appendKey(binary.AppendUvarint(append(buf[:0], 'k'), uint64(k.id)), dst)
		if ok && len(key) <= 2*maxSharedString {
			dst.Set(reflect.ValueOf(s.value(key, dst.Interface)))
		}
	}
}

// appendKey appends to b what k keeps of v, written so that only equal
// values of k's field append equal bytes, and reports false for a value
// it cannot write so.
func (k *keptField) appendKey(b []byte, v reflect.Value) ([]byte, bool) {
	if k.all {
		return appendScalars(b, v)
	}
	if v.Kind() == reflect.Struct {
		for _, child := range k.ordered {
			var ok bool
			if b, ok = child.appendKey(b, v.FieldByIndex(child.index)); !ok {
				return b, false
			}
		}
		return b, true
	}
	return appendHeld(b, v, k.appendKey)
}

// appendScalars appends v to b as appendKey does, for a v that is a
// string, a number, a boolean, or a pointer to or list of them.
func appendScalars(b []byte, v reflect.Value) ([]byte, bool) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		return append(binary.AppendUvarint(append(b, '"'), uint64(len(s))), s...), true
	case reflect.Bool:
		if v.Bool() {
			return append(b, 't'), true
		}
		return append(b, 'f'), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return binary.AppendVarint(append(b, 'i'), v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return binary.AppendUvarint(append(b, 'u'), v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return binary.AppendUvarint(append(b, 'r'), math.Float64bits(v.Float())), true
	}
	return appendHeld(b, v, appendScalars)
}

// appendHeld appends pointer or list v to b as appendKey does, the
// values it holds by elem, and reports false for a v of another kind.
func appendHeld(b []byte, v reflect.Value, elem func([]byte, reflect.Value) ([]byte, bool)) ([]byte, bool) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return append(b, 'n'), true
		}
		return elem(append(b, 'p'), v.Elem())
	case reflect.Slice:
		if v.IsNil() {
			return append(b, 'n'), true
		}
		b = binary.AppendUvarint(append(b, 'l'), uint64(v.Len()))
		for i := range v.Len() {
			var ok bool
			if b, ok = elem(b, v.Index(i)); !ok {
				return b, false
			}
		}
		return b, true
	}
	return b, false
}

// strings returns a list equal to list, shared with the objects that met
// an equal one before.
func (s *sharedValues) strings(list []string) []string {
	if list == nil {
		return nil
	}
	var buf [128]byte
	key, _ := appendScalars(append(buf[:0], 'f'), reflect.ValueOf(list))
	if len(key) > 2*maxSharedString {
		return list
	}
	return s.value(key, func() any { return list }).([]string)
}
