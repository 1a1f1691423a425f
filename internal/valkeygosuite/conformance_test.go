package valkeygosuite_test

import (
	"testing"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/conformance"
	"github.com/scriptlock/scriptlock/drivers/valkeygo"
	"github.com/scriptlock/scriptlock/locker"
)

// TestConformance certifies the driver with the exported suite, on a
// standalone server and on a Cluster that the suite starts. valkey-go
// detects a Cluster by itself, so both use the same constructor.
func TestConformance(t *testing.T) {
	conformance.Run(t, Driver)
}

// Driver connects the driver for the suite: a fresh client per rule,
// without client-side caching (the suite's ACL user is not granted CLIENT
// TRACKING), closed when the rule ends.
var Driver = conformance.Driver{
	Name:       "valkeygo",
	Standalone: func(t testing.TB, addr string) locker.Scripter { return connect(t, []string{addr}) },
	Cluster:    func(t testing.TB, addrs []string) locker.Scripter { return connect(t, addrs) },
	Authenticated: func(t testing.TB, addrs []string, _ bool, user, password string) locker.Scripter {
		return connect(t, addrs, func(o *valkey.ClientOption) { o.Username, o.Password = user, password })
	},
}

func connect(t testing.TB, addrs []string, opts ...func(*valkey.ClientOption)) locker.Scripter {
	o := valkey.ClientOption{InitAddress: addrs, DisableCache: true}
	for _, f := range opts {
		f(&o)
	}
	c, err := valkey.NewClient(o)
	if err != nil {
		t.Fatalf("valkey-go: NewClient(%v): %v", addrs, err)
	}
	t.Cleanup(c.Close)
	return valkeygo.New(c)
}
