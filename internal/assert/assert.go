// Package assert is the subset of github.com/stretchr/testify/assert the
// repository's tests use, on the standard library only, so that the core
// module requires nothing. Every function has testify's name, argument
// order and semantics (Equal compares with ObjectsAreEqual:
// reflect.DeepEqual, []byte by bytes.Equal); it reports a failure with
// t.Errorf, naming the expected and actual values, and returns whether
// the assertion held. Package require has the same functions, which stop
// the test on failure.
package assert

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"time"
)

// TestingT is what the assertions need of a *testing.T.
type TestingT interface {
	Errorf(format string, args ...any)
}

type helper interface{ Helper() }

// Fail reports a failure with the message and msgAndArgs.
func Fail(t TestingT, failure string, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	msg := messageFromMsgAndArgs(msgAndArgs...)
	if msg != "" {
		t.Errorf("\n\tError: %s\n\tMessages: %s", failure, msg)
	} else {
		t.Errorf("\n\tError: %s", failure)
	}
	return false
}

func messageFromMsgAndArgs(msgAndArgs ...any) string {
	switch len(msgAndArgs) {
	case 0:
		return ""
	case 1:
		if s, ok := msgAndArgs[0].(string); ok {
			return s
		}
		return fmt.Sprintf("%+v", msgAndArgs[0])
	}
	if s, ok := msgAndArgs[0].(string); ok {
		return fmt.Sprintf(s, msgAndArgs[1:]...)
	}
	return fmt.Sprintf("%+v", msgAndArgs)
}

// format prints a value for a failure message, with its type when %#v
// does not show it.
func format(v any) string {
	if v == nil {
		return "<nil>"
	}
	switch v.(type) {
	case string, error, fmt.Stringer:
		return fmt.Sprintf("%T(%#v)", v, v)
	}
	return fmt.Sprintf("%#v", v)
}

// ObjectsAreEqual reports whether expected and actual are equal: []byte
// values by bytes.Equal, everything else by reflect.DeepEqual.
func ObjectsAreEqual(expected, actual any) bool {
	if expected == nil || actual == nil {
		return expected == actual
	}
	exp, ok := expected.([]byte)
	if !ok {
		return reflect.DeepEqual(expected, actual)
	}
	act, ok := actual.([]byte)
	if !ok {
		return false
	}
	if exp == nil || act == nil {
		return exp == nil && act == nil
	}
	return bytes.Equal(exp, act)
}

// ObjectsAreEqualValues is ObjectsAreEqual, or equal after converting
// actual to expected's type.
func ObjectsAreEqualValues(expected, actual any) bool {
	if ObjectsAreEqual(expected, actual) {
		return true
	}
	if expected == nil || actual == nil {
		return false
	}
	et, av := reflect.TypeOf(expected), reflect.ValueOf(actual)
	if !av.Type().ConvertibleTo(et) {
		return false
	}
	return reflect.DeepEqual(expected, av.Convert(et).Interface())
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}

func isEmpty(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Chan, reflect.Map, reflect.Slice:
		return rv.Len() == 0
	case reflect.Pointer:
		if rv.IsNil() {
			return true
		}
		return isEmpty(rv.Elem().Interface())
	}
	return reflect.DeepEqual(v, reflect.Zero(rv.Type()).Interface())
}

// Equal asserts that expected and actual are equal (ObjectsAreEqual).
func Equal(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !ObjectsAreEqual(expected, actual) {
		return Fail(t, fmt.Sprintf("Not equal:\n\t       expected: %s\n\t       actual  : %s", format(expected), format(actual)), msgAndArgs...)
	}
	return true
}

// EqualValues asserts that expected and actual are equal, or equal once
// converted to the same type.
func EqualValues(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !ObjectsAreEqualValues(expected, actual) {
		return Fail(t, fmt.Sprintf("Not equal:\n\t       expected: %s\n\t       actual  : %s", format(expected), format(actual)), msgAndArgs...)
	}
	return true
}

// NotEqual asserts that expected and actual are not equal.
func NotEqual(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if ObjectsAreEqual(expected, actual) {
		return Fail(t, fmt.Sprintf("Should not be: %s", format(actual)), msgAndArgs...)
	}
	return true
}

// Same asserts that two pointers point to the same object.
func Same(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !samePointers(expected, actual) {
		return Fail(t, fmt.Sprintf("Not same:\n\t       expected: %p %s\n\t       actual  : %p %s", expected, format(expected), actual, format(actual)), msgAndArgs...)
	}
	return true
}

// NotSame asserts that two pointers do not point to the same object.
func NotSame(t TestingT, expected, actual any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if samePointers(expected, actual) {
		return Fail(t, fmt.Sprintf("Expected and actual point to the same object: %p %s", expected, format(expected)), msgAndArgs...)
	}
	return true
}

func samePointers(a, b any) bool {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if av.Kind() != reflect.Pointer || bv.Kind() != reflect.Pointer {
		return false
	}
	return av.Type() == bv.Type() && av.Pointer() == bv.Pointer()
}

// Nil asserts that object is nil.
func Nil(t TestingT, object any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !isNil(object) {
		return Fail(t, "Expected nil, but got: "+format(object), msgAndArgs...)
	}
	return true
}

// NotNil asserts that object is not nil.
func NotNil(t TestingT, object any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if isNil(object) {
		return Fail(t, "Expected value not to be nil.", msgAndArgs...)
	}
	return true
}

// True asserts that value is true.
func True(t TestingT, value bool, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !value {
		return Fail(t, "Should be true", msgAndArgs...)
	}
	return true
}

// False asserts that value is false.
func False(t TestingT, value bool, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if value {
		return Fail(t, "Should be false", msgAndArgs...)
	}
	return true
}

// Empty asserts that object is empty: nil, zero, or of length zero.
func Empty(t TestingT, object any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !isEmpty(object) {
		return Fail(t, "Should be empty, but was "+format(object), msgAndArgs...)
	}
	return true
}

// NotEmpty asserts that object is not empty.
func NotEmpty(t TestingT, object any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if isEmpty(object) {
		return Fail(t, "Should NOT be empty, but was "+format(object), msgAndArgs...)
	}
	return true
}

// Zero asserts that i is the zero value of its type.
func Zero(t TestingT, i any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if i != nil && !reflect.DeepEqual(i, reflect.Zero(reflect.TypeOf(i)).Interface()) {
		return Fail(t, "Should be zero, but was "+format(i), msgAndArgs...)
	}
	return true
}

// NotZero asserts that i is not the zero value of its type.
func NotZero(t TestingT, i any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if i == nil || reflect.DeepEqual(i, reflect.Zero(reflect.TypeOf(i)).Interface()) {
		return Fail(t, "Should not be zero, but was "+format(i), msgAndArgs...)
	}
	return true
}

// Len asserts that object has length length.
func Len(t TestingT, object any, length int, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	n, ok := getLen(object)
	if !ok {
		return Fail(t, fmt.Sprintf("\"%v\" could not be applied builtin len()", object), msgAndArgs...)
	}
	if n != length {
		return Fail(t, fmt.Sprintf("\"%v\" should have %d item(s), but has %d", object, length, n), msgAndArgs...)
	}
	return true
}

func getLen(x any) (n int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return reflect.ValueOf(x).Len(), true
}

// containsElement reports whether list (a string, a map's keys, an array
// or a slice) contains element; ok is false when list is none of them.
func containsElement(list, element any) (ok, found bool) {
	lv := reflect.ValueOf(list)
	if list == nil {
		return false, false
	}
	switch lv.Kind() {
	case reflect.String:
		ev := reflect.ValueOf(element)
		if !ev.IsValid() || ev.Kind() != reflect.String {
			return false, false
		}
		return true, strings.Contains(lv.String(), ev.String())
	case reflect.Map:
		for _, k := range lv.MapKeys() {
			if ObjectsAreEqual(k.Interface(), element) {
				return true, true
			}
		}
		return true, false
	case reflect.Slice, reflect.Array:
		for i := 0; i < lv.Len(); i++ {
			if ObjectsAreEqual(lv.Index(i).Interface(), element) {
				return true, true
			}
		}
		return true, false
	}
	return false, false
}

// Contains asserts that s (a string, slice, array or map) contains
// contains (a substring, an element, a key).
func Contains(t TestingT, s, contains any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	ok, found := containsElement(s, contains)
	if !ok {
		return Fail(t, fmt.Sprintf("%s could not be applied builtin len()", format(s)), msgAndArgs...)
	}
	if !found {
		return Fail(t, fmt.Sprintf("%s does not contain %s", format(s), format(contains)), msgAndArgs...)
	}
	return true
}

// NotContains asserts that s does not contain contains.
func NotContains(t TestingT, s, contains any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	ok, found := containsElement(s, contains)
	if !ok {
		return Fail(t, fmt.Sprintf("%s could not be applied builtin len()", format(s)), msgAndArgs...)
	}
	if found {
		return Fail(t, fmt.Sprintf("%s should not contain %s", format(s), format(contains)), msgAndArgs...)
	}
	return true
}

// Subset asserts that every element of subset is in list (for maps:
// every key, with an equal value).
func Subset(t TestingT, list, subset any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if subset == nil {
		return true
	}
	lv, sv := reflect.ValueOf(list), reflect.ValueOf(subset)
	if sv.Kind() == reflect.Map && lv.Kind() == reflect.Map {
		for _, k := range sv.MapKeys() {
			v := lv.MapIndex(k)
			if !v.IsValid() || !ObjectsAreEqual(v.Interface(), sv.MapIndex(k).Interface()) {
				return Fail(t, fmt.Sprintf("%s does not contain %s", format(list), format(subset)), msgAndArgs...)
			}
		}
		return true
	}
	if sv.Kind() != reflect.Slice && sv.Kind() != reflect.Array {
		return Fail(t, fmt.Sprintf("%s has an unsupported type %s", format(subset), sv.Kind()), msgAndArgs...)
	}
	for i := 0; i < sv.Len(); i++ {
		e := sv.Index(i).Interface()
		ok, found := containsElement(list, e)
		if !ok {
			return Fail(t, fmt.Sprintf("%s could not be applied builtin len()", format(list)), msgAndArgs...)
		}
		if !found {
			return Fail(t, fmt.Sprintf("%s does not contain %s", format(list), format(e)), msgAndArgs...)
		}
	}
	return true
}

// ElementsMatch asserts that listA and listB hold the same elements, in
// any order, with the same number of each.
func ElementsMatch(t TestingT, listA, listB any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if isEmpty(listA) && isEmpty(listB) {
		return true
	}
	av, bv := reflect.ValueOf(listA), reflect.ValueOf(listB)
	for _, v := range []reflect.Value{av, bv} {
		if k := v.Kind(); k != reflect.Slice && k != reflect.Array {
			return Fail(t, fmt.Sprintf("%s is not a list", v.Kind()), msgAndArgs...)
		}
	}
	used := make([]bool, bv.Len())
	var extraA []any
	for i := 0; i < av.Len(); i++ {
		found := false
		for j := 0; j < bv.Len(); j++ {
			if !used[j] && ObjectsAreEqual(av.Index(i).Interface(), bv.Index(j).Interface()) {
				used[j], found = true, true
				break
			}
		}
		if !found {
			extraA = append(extraA, av.Index(i).Interface())
		}
	}
	var extraB []any
	for j := 0; j < bv.Len(); j++ {
		if !used[j] {
			extraB = append(extraB, bv.Index(j).Interface())
		}
	}
	if len(extraA) > 0 || len(extraB) > 0 {
		return Fail(t, fmt.Sprintf("elements differ:\n\t       listA: %s\n\t       listB: %s\n\t       extra in listA: %s\n\t       extra in listB: %s",
			format(listA), format(listB), format(extraA), format(extraB)), msgAndArgs...)
	}
	return true
}

// NoError asserts that err is nil.
func NoError(t TestingT, err error, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if err != nil {
		return Fail(t, fmt.Sprintf("Received unexpected error:\n\t       %+v", err), msgAndArgs...)
	}
	return true
}

// Error asserts that err is not nil.
func Error(t TestingT, err error, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if err == nil {
		return Fail(t, "An error is expected but got nil.", msgAndArgs...)
	}
	return true
}

// ErrorIs asserts that errors.Is(err, target).
func ErrorIs(t TestingT, err, target error, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !errors.Is(err, target) {
		return Fail(t, fmt.Sprintf("Target error should be in err chain:\n\t       expected: %v\n\t       in chain: %v", target, chain(err)), msgAndArgs...)
	}
	return true
}

// NotErrorIs asserts that !errors.Is(err, target).
func NotErrorIs(t TestingT, err, target error, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if errors.Is(err, target) {
		return Fail(t, fmt.Sprintf("Target error should not be in err chain:\n\t       found: %v\n\t       in chain: %v", target, chain(err)), msgAndArgs...)
	}
	return true
}

func chain(err error) string {
	if err == nil {
		return "<nil>"
	}
	var parts []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		parts = append(parts, fmt.Sprintf("%q", e.Error()))
	}
	return strings.Join(parts, "\n\t\t")
}

// ErrorAs asserts that errors.As(err, target).
func ErrorAs(t TestingT, err error, target any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if !errors.As(err, target) {
		return Fail(t, fmt.Sprintf("Should be in error chain:\n\t       expected: %s\n\t       in chain: %v", reflect.TypeOf(target).Elem(), chain(err)), msgAndArgs...)
	}
	return true
}

// ErrorContains asserts that err is not nil and its message contains
// contains.
func ErrorContains(t TestingT, err error, contains string, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if err == nil {
		return Fail(t, fmt.Sprintf("An error is expected but got nil. (expected it to contain %q)", contains), msgAndArgs...)
	}
	if !strings.Contains(err.Error(), contains) {
		return Fail(t, fmt.Sprintf("Error %q does not contain %q", err.Error(), contains), msgAndArgs...)
	}
	return true
}

// Regexp asserts that str (formatted with fmt.Sprint) matches rx, a
// *regexp.Regexp or a pattern string.
func Regexp(t TestingT, rx, str any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	r, ok := rx.(*regexp.Regexp)
	if !ok {
		r = regexp.MustCompile(fmt.Sprint(rx))
	}
	if !r.MatchString(fmt.Sprint(str)) {
		return Fail(t, fmt.Sprintf("Expect %q to match %q", fmt.Sprint(str), r.String()), msgAndArgs...)
	}
	return true
}

// NotPanics asserts that f does not panic.
func NotPanics(t TestingT, f func(), msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	var r any
	panicked := true
	func() {
		defer func() { r = recover() }()
		f()
		panicked = false
	}()
	if panicked {
		return Fail(t, fmt.Sprintf("func %p should not panic\n\tPanic value:\t%v", f, r), msgAndArgs...)
	}
	return true
}

// Eventually asserts that condition returns true within waitFor, calling
// it every tick.
func Eventually(t TestingT, condition func() bool, waitFor, tick time.Duration, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	deadline := time.NewTimer(waitFor)
	defer deadline.Stop()
	ticker := time.NewTicker(tick)
	defer ticker.Stop()
	done := make(chan bool, 1)
	running := false
	for {
		select {
		case <-deadline.C:
			return Fail(t, "Condition never satisfied", msgAndArgs...)
		case <-ticker.C:
			if running {
				continue
			}
			running = true
			go func() { done <- condition() }()
		case ok := <-done:
			if ok {
				return true
			}
			running = false
		}
	}
}

// ordered values: a comparison of two values of the same ordered type.

func compare(a, b any) (int, bool) {
	av, bv := reflect.ValueOf(a), reflect.ValueOf(b)
	if !av.IsValid() || !bv.IsValid() || av.Type() != bv.Type() {
		return 0, false
	}
	if ta, ok := a.(time.Time); ok {
		return ta.Compare(b.(time.Time)), true
	}
	switch av.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return cmp3(av.Int() < bv.Int(), av.Int() > bv.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return cmp3(av.Uint() < bv.Uint(), av.Uint() > bv.Uint()), true
	case reflect.Float32, reflect.Float64:
		return cmp3(av.Float() < bv.Float(), av.Float() > bv.Float()), true
	case reflect.String:
		return strings.Compare(av.String(), bv.String()), true
	}
	if ab, ok := a.([]byte); ok {
		return bytes.Compare(ab, b.([]byte)), true
	}
	return 0, false
}

func cmp3(less, greater bool) int {
	switch {
	case less:
		return -1
	case greater:
		return 1
	}
	return 0
}

func compareTwo(t TestingT, e1, e2 any, ok func(int) bool, rel string, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	c, comparable := compare(e1, e2)
	if !comparable {
		return Fail(t, fmt.Sprintf("cannot compare %s and %s (both must be of the same ordered type)", format(e1), format(e2)), msgAndArgs...)
	}
	if !ok(c) {
		return Fail(t, fmt.Sprintf("\"%v\" is not %s \"%v\"", e1, rel, e2), msgAndArgs...)
	}
	return true
}

// Greater asserts that e1 > e2.
func Greater(t TestingT, e1, e2 any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return compareTwo(t, e1, e2, func(c int) bool { return c > 0 }, "greater than", msgAndArgs...)
}

// GreaterOrEqual asserts that e1 >= e2.
func GreaterOrEqual(t TestingT, e1, e2 any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return compareTwo(t, e1, e2, func(c int) bool { return c >= 0 }, "greater than or equal to", msgAndArgs...)
}

// Less asserts that e1 < e2.
func Less(t TestingT, e1, e2 any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return compareTwo(t, e1, e2, func(c int) bool { return c < 0 }, "less than", msgAndArgs...)
}

// LessOrEqual asserts that e1 <= e2.
func LessOrEqual(t TestingT, e1, e2 any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	return compareTwo(t, e1, e2, func(c int) bool { return c <= 0 }, "less than or equal to", msgAndArgs...)
}

// Positive asserts that e > 0.
func Positive(t TestingT, e any, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	if e == nil {
		return Fail(t, "nil is not positive", msgAndArgs...)
	}
	return compareTwo(t, e, reflect.Zero(reflect.TypeOf(e)).Interface(), func(c int) bool { return c > 0 }, "positive: greater than", msgAndArgs...)
}

func toFloat(x any) (float64, bool) {
	v := reflect.ValueOf(x)
	switch v.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(v.Int()), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return float64(v.Uint()), true
	case reflect.Float32, reflect.Float64:
		return v.Float(), true
	}
	return 0, false
}

// InDelta asserts that |expected - actual| <= delta.
func InDelta(t TestingT, expected, actual any, delta float64, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	af, aok := toFloat(expected)
	bf, bok := toFloat(actual)
	if !aok || !bok {
		return Fail(t, "Parameters must be numerical", msgAndArgs...)
	}
	if math.IsNaN(af) || math.IsNaN(bf) {
		return Fail(t, "Numbers must not be NaN", msgAndArgs...)
	}
	if d := af - bf; d < -delta || d > delta {
		return Fail(t, fmt.Sprintf("Max difference between %v and %v allowed is %v, but difference was %v", expected, actual, delta, d), msgAndArgs...)
	}
	return true
}

// InEpsilon asserts that the relative error |expected - actual| / |expected|
// is at most epsilon.
func InEpsilon(t TestingT, expected, actual any, epsilon float64, msgAndArgs ...any) bool {
	if h, ok := t.(helper); ok {
		h.Helper()
	}
	af, aok := toFloat(expected)
	bf, bok := toFloat(actual)
	if !aok || !bok {
		return Fail(t, "Parameters must be numerical", msgAndArgs...)
	}
	if af == 0 {
		return Fail(t, "expected value must have a value other than zero to calculate the relative error", msgAndArgs...)
	}
	if rel := math.Abs(af-bf) / math.Abs(af); math.IsNaN(rel) || rel > epsilon {
		return Fail(t, fmt.Sprintf("Relative error is too high: %v (expected)\n\t        < %v (actual)", epsilon, rel), msgAndArgs...)
	}
	return true
}
