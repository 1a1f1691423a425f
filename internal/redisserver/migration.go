package redisserver

import (
	"context"
	"fmt"
	"strconv"
)

// Migration is a slot move begun by [Cluster.BeginMigration] and held in
// its first state until [Migration.Finish]: the slot is IMPORTING on the
// target and MIGRATING on the source, and no key has moved. Commands whose
// keys all exist on the source are served there; a command with a missing
// key gets ASK, and a multi-key command with only some of its keys present
// gets TRYAGAIN.
type Migration struct {
	c        *Cluster
	slot     int
	from, to *Server
	toID     string
}

// BeginMigration starts moving slot from the master that serves it to the
// master to, as [Cluster.MigrateSlot] does (CLUSTER SETSLOT slot IMPORTING
// on to, then MIGRATING on the owner), and stops there: no key moves until
// [Migration.Finish]. It blocks until both nodes have replied or ctx is
// done. It fails when slot is out of range, to is not one of the current
// masters or already serves slot, or a step fails; after a failed
// MIGRATING step the target is left IMPORTING.
func (c *Cluster) BeginMigration(ctx context.Context, slot int, to *Server) (*Migration, error) {
	if to == nil || !c.isMaster(to) {
		return nil, fmt.Errorf("redisserver: BeginMigration %d: target %s is not a master of the cluster", slot, addrOf(to))
	}
	fail := func(step string, err error) error {
		return fmt.Errorf("redisserver: BeginMigration %d to %s: %s: %w", slot, to.Addr, step, err)
	}
	from, err := c.NodeForSlot(ctx, slot)
	if err != nil {
		return nil, fail("find owner", err)
	}
	if from == to {
		return nil, fail("find owner", fmt.Errorf("%s already serves the slot", to.Addr))
	}
	fromID, err := from.myID(ctx)
	if err != nil {
		return nil, fail("source id", err)
	}
	toID, err := to.myID(ctx)
	if err != nil {
		return nil, fail("target id", err)
	}
	s := strconv.Itoa(slot)
	if _, err := to.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", fromID); err != nil {
		return nil, fail(to.Addr+": CLUSTER SETSLOT IMPORTING", err)
	}
	if _, err := from.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", toID); err != nil {
		return nil, fail(from.Addr+": CLUSTER SETSLOT MIGRATING", err)
	}
	return &Migration{c: c, slot: slot, from: from, to: to, toID: toID}, nil
}

// From returns the slot's source master.
func (m *Migration) From() *Server { return m.from }

// To returns the slot's target master.
func (m *Migration) To() *Server { return m.to }

// Finish completes the move as [Cluster.MigrateSlot] does: it migrates
// every key of the slot from the source to the target, then assigns the
// slot to the target on every master, and blocks until every node agrees
// on the new slot map (as [Cluster.WaitReady] checks) or ctx is done. It
// fails when a step fails; the slot may then be left mid-move, and the
// Cluster is unfit for further tests.
func (m *Migration) Finish(ctx context.Context) error {
	return m.c.finishMigration(ctx, m.slot, m.from, m.to, m.toID)
}

// finishMigration moves slot's keys from from to to and assigns the slot
// to to (whose node id is toID) on every master, then waits for every node
// to agree.
func (c *Cluster) finishMigration(ctx context.Context, slot int, from, to *Server, toID string) error {
	fail := func(step string, err error) error {
		return fmt.Errorf("redisserver: migrate slot %d to %s: %s: %w", slot, to.Addr, step, err)
	}
	s := strconv.Itoa(slot)
	if err := moveKeys(ctx, from, to, s); err != nil {
		return fail("move keys", err)
	}
	owners := []*Server{to, from}
	for _, m := range c.Masters() {
		if m != to && m != from {
			owners = append(owners, m)
		}
	}
	for _, m := range owners {
		if _, err := m.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", toID); err != nil {
			return fail(m.Addr+": CLUSTER SETSLOT NODE", err)
		}
	}
	err := poll(ctx, func() error {
		ranges, err := c.check(ctx)
		if err != nil {
			return err
		}
		if got := ownerOf(ranges, slot); got != to.Addr {
			return fmt.Errorf("slot %d served by %s", slot, got)
		}
		return nil
	})
	if err != nil {
		return fail("wait for agreement", err)
	}
	return nil
}
