// Package readme holds the test that keeps the repository's README.md
// honest: every ```go block in it is a complete Go file without its
// package clause, and the test compiles each one (go build, each block a
// package of its own, so blocks may reuse names) and checks that it
// handles every error it assigns. The guide's "Using a lock" block must
// also appear verbatim in drivers/goredis/example_unlock_test.go, which
// runs it as Example_leaseUnlock and with an ended context.
package readme
