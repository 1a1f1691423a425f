package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/require"
)

func init() {
	migrateCases = append(migrateCases, testCase{
		name:        "Migrate/LeaseOpsDuringMigration",
		needs:       "migrates a slot to another master (CLUSTER SETSLOT, MIGRATE)",
		rule:        "While the slot of a held mutex lease, read lease and write lease is MIGRATING (keys not moved yet), TTL, Extend and Unlock of each lease succeed on their first call: lease operations pass only the lock's hash key, which exists on the source.",
		check:       checkLeaseOpsDuringMigration,
		exclusive:   "migrates a slot to another master",
		clusterOnly: true,
	})
}

// migrateCall bounds each lease call of the migration case: a driver that
// retries TRYAGAIN by itself would otherwise wait for the whole window.
const migrateCall = 5 * time.Second

func checkLeaseOpsDuringMigration(t *testing.T, e *env) {
	e.needsOwnedServer("migrates a slot to another master and leaves it there")
	cl := e.d.admin.cluster()
	c := e.client(nil)
	// Three names whose keys share one slot (escaping leaves these names
	// unchanged, so the slot is CRC16 of the name).
	names := sameSlotNames("mig", "mig-r-", "mig-w-")
	slot := int(keySlot(names[0]))
	for _, n := range names {
		got, err := cl.SlotOf(e.ctx, c.Key(n))
		require.NoError(t, err, "call: CLUSTER KEYSLOT %s", c.Key(n))
		require.Equal(t, slot, got, "call: CLUSTER KEYSLOT %s: the case's names must share slot %d", c.Key(n), slot)
	}

	const ttl = 30 * time.Second
	mu, err := e.mutex(c, names[0], ttl, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: TryLock %q", names[0])
	rd, err := e.rw(c, names[1], ttl, nil).TryRLock(e.ctx)
	require.NoError(t, err, "call: TryRLock %q", names[1])
	wr, err := e.rw(c, names[2], ttl, nil).TryLock(e.ctx)
	require.NoError(t, err, "call: RWMutex TryLock %q", names[2])

	to, err := cl.OtherMaster(e.ctx, slot)
	require.NoError(t, err, "call: OtherMaster(%d)", slot)
	m, err := cl.BeginMigration(e.ctx, slot, to)
	require.NoError(t, err, "call: BeginMigration(%d, %s)", slot, to.Addr)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, m.Finish(ctx), "call: finish the migration of slot %d to %s after the case", slot, to.Addr)
	})
	t.Logf("slot %d MIGRATING on %s, IMPORTING on %s; no key moved", slot, m.From().Addr, to.Addr)

	leases := []struct {
		kind string
		l    *locker.Lease
	}{{"mutex", mu}, {"read", rd}, {"write", wr}}
	for _, le := range leases {
		ops := []struct {
			call string
			op   func(ctx context.Context) error
		}{
			{"TTL", func(ctx context.Context) error { _, err := le.l.TTL(ctx); return err }},
			{"Extend(20s)", func(ctx context.Context) error { return le.l.Extend(ctx, 20*time.Second) }},
			{"Unlock", le.l.Unlock},
		}
		for _, o := range ops {
			ctx, cancel := context.WithTimeout(e.ctx, migrateCall)
			err := o.op(ctx)
			cancel()
			require.NoError(t, err, "call: %s of the %s lease on %q with slot %d MIGRATING (keys not moved): got error, want success on the first call", o.call, le.kind, le.l.Name(), slot)
		}
	}
}
