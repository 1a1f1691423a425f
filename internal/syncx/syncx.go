// Package syncx holds two small collectors the tests share: a Log of
// values that several goroutines append and a test reads, and a Buffer
// that several goroutines write and a test reads.
package syncx

import (
	"bytes"
	"sync"
)

// Log is a list that is safe for concurrent appends and reads. Its zero
// value is empty and ready.
type Log[T any] struct {
	mu    sync.Mutex
	items []T
}

// Add appends v.
func (l *Log[T]) Add(v T) {
	l.mu.Lock()
	l.items = append(l.items, v)
	l.mu.Unlock()
}

// All returns a copy of the values added so far, in order.
func (l *Log[T]) All() []T {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]T(nil), l.items...)
}

// Reset forgets the values added so far.
func (l *Log[T]) Reset() {
	l.mu.Lock()
	l.items = nil
	l.mu.Unlock()
}

// Buffer is a bytes.Buffer that is safe for concurrent writes and reads.
// Its zero value is empty and ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns what was written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
