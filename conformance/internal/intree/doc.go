// Package intree certifies the in-tree drivers (go-redis, redigo, rueidis,
// valkey-go) with the conformance suite, standalone and Cluster, and holds
// the tests of the suite itself that need a driver (the safe profile
// through an ACL user and over TLS, the guest rules, a driver without
// Connect). It has tests only.
//
// It is a module of its own, never released, so that the suite's module
// requires only the core and testify: a third-party driver that imports
// github.com/scriptlock/scriptlock/conformance gets no Redis client. It
// calls the suite as a third-party driver does (conformance.Run,
// RunGroups) and reaches what the suite does not export through
// conformance/internal/hooks. From the repository's root:
//
//	go test ./conformance/internal/intree/ -run 'TestConformance/driver=goredis'
//	go test github.com/scriptlock/scriptlock/conformance/...   # the suite's own tests too
package intree
