// Package readme holds the test that keeps the repository's README.md
// honest: every ```go block in it is a complete Go file without its
// package clause, and the test compiles each one (go build, each block a
// package of its own, so blocks may reuse names) and checks that it
// handles every error it assigns. The README's "Using a lock" block must
// also appear verbatim in locker/unlock_test.go (with an ended context)
// and drivers/goredis/example_unlock_test.go (Example_leaseUnlock), which
// run it.
package readme
