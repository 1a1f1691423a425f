package redisserver

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"time"
)

const (
	// migrateBatch is how many keys one MIGRATE moves.
	migrateBatch = 100
	// migrateTimeout is MIGRATE's own I/O timeout, in milliseconds.
	migrateTimeout = "5000"
)

// MigrateSlot moves slot, with all its keys, from the master that serves it
// to the master to, the way redis-cli --cluster reshard does:
//
//  1. CLUSTER SETSLOT slot IMPORTING on to, then MIGRATING on the owner;
//  2. CLUSTER GETKEYSINSLOT and MIGRATE ... KEYS on the owner, in batches of
//     100 keys, until the slot is empty there;
//  3. CLUSTER SETSLOT slot NODE on to, then on the old owner, then on the
//     other masters.
//
// Clients see ASK during the move (for keys not, or no longer, on the old
// owner; TRYAGAIN for commands whose keys are split) and MOVED afterwards.
// Keys keep their TTLs.
//
// It blocks until the move is done and every node agrees on the new slot
// map (as [Cluster.WaitReady] checks), or ctx is done. Moving a slot to its
// own master does nothing. It fails when slot is out of range, to is not
// one of the current masters, or a step fails; the slot may then be left
// mid-move (IMPORTING and MIGRATING, its keys split between the two), and
// the Cluster is unfit for further tests.
func (c *Cluster) MigrateSlot(ctx context.Context, slot int, to *Server) error {
	return c.migrateSlot(ctx, slot, to, 0)
}

// MigrateSlotSlowly is [Cluster.MigrateSlot] with two pauses of length
// pause, so that a concurrent workload runs through the whole move: one
// after the slot is marked IMPORTING and MIGRATING, before any key moves
// (keys still on the old owner are served there, new keys get ASK), and one
// after every key has moved, before the new owner is set (every key gets
// ASK). It blocks for at least twice pause, and fails as MigrateSlot does.
func (c *Cluster) MigrateSlotSlowly(ctx context.Context, slot int, to *Server, pause time.Duration) error {
	return c.migrateSlot(ctx, slot, to, pause)
}

// migrateSlot is MigrateSlot with a pause before and after moving the keys.
func (c *Cluster) migrateSlot(ctx context.Context, slot int, to *Server, pause time.Duration) error {
	if to == nil || !c.isMaster(to) {
		return fmt.Errorf("redisserver: MigrateSlot %d: target %s is not a master of the cluster", slot, addrOf(to))
	}
	from, err := c.NodeForSlot(ctx, slot)
	if err != nil {
		return fmt.Errorf("redisserver: MigrateSlot %d to %s: find owner: %w", slot, to.Addr, err)
	}
	if from == to {
		return nil
	}
	m, err := c.BeginMigration(ctx, slot, to)
	if err != nil {
		return err
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("redisserver: MigrateSlot %d to %s: %s: %w", slot, to.Addr, step, err)
	}
	if err := sleep(ctx, pause); err != nil {
		return fail("pause", err)
	}
	if pause > 0 {
		if err := moveKeys(ctx, from, to, strconv.Itoa(slot)); err != nil {
			return fail("move keys", err)
		}
		if err := sleep(ctx, pause); err != nil {
			return fail("pause", err)
		}
		// Nothing should have arrived meanwhile (the source sends new keys
		// to the target), but Finish moves whatever did: a slot left
		// non-empty would lose keys.
	}
	return m.Finish(ctx)
}

// moveKeys migrates every key of slot s from from to to, in batches. It
// blocks until from has no key left in the slot or ctx is done.
func moveKeys(ctx context.Context, from, to *Server, s string) error {
	host, port, err := net.SplitHostPort(to.Addr)
	if err != nil {
		return err
	}
	for {
		v, err := from.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, strconv.Itoa(migrateBatch))
		if err != nil {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: %w", from.Addr, err)
		}
		keys, ok := v.([]any)
		if !ok {
			return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: unexpected reply %#v", from.Addr, v)
		}
		if len(keys) == 0 {
			return nil
		}
		args := []string{"MIGRATE", host, port, "", "0", migrateTimeout, "KEYS"}
		for _, k := range keys {
			k, ok := k.(string)
			if !ok {
				return fmt.Errorf("%s: CLUSTER GETKEYSINSLOT: unexpected reply %#v", from.Addr, v)
			}
			args = append(args, k)
		}
		if _, err := from.Do(ctx, args...); err != nil {
			return fmt.Errorf("%s: MIGRATE %d keys to %s: %w", from.Addr, len(keys), to.Addr, err)
		}
	}
}

// sleep waits for d or until ctx is done, and then returns ctx's error.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
