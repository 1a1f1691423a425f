package redisserver

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// SlotOf returns key's hash slot (CLUSTER KEYSLOT), asked of the first node
// that answers, masters first. It blocks until a node answers or ctx is
// done, and fails when no node answers.
func (c *Cluster) SlotOf(ctx context.Context, key string) (int, error) {
	var errs []error
	for _, s := range c.servers() {
		v, err := s.Do(ctx, "CLUSTER", "KEYSLOT", key)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		slot, ok := v.(int64)
		if !ok {
			return 0, fmt.Errorf("redisserver: %s: CLUSTER KEYSLOT: unexpected reply %#v", s.Addr, v)
		}
		return int(slot), nil
	}
	return 0, fmt.Errorf("redisserver: SlotOf %q: no node answers: %w", key, errors.Join(errs...))
}

// NodeFor returns the master that serves key's hash slot, found with CLUSTER
// KEYSLOT and a fresh CLUSTER SLOTS, so it follows failovers and slot
// migrations. It blocks until a node answers or ctx is done; it fails when
// no node answers or the slot's master is not a node of the Cluster.
func (c *Cluster) NodeFor(ctx context.Context, key string) (*Server, error) {
	slot, err := c.SlotOf(ctx, key)
	if err != nil {
		return nil, err
	}
	n, err := c.NodeForSlot(ctx, slot)
	if err != nil {
		return nil, fmt.Errorf("%w (key %q)", err, key)
	}
	return n, nil
}

// NodeForSlot returns the master that serves slot, found with a fresh
// CLUSTER SLOTS on the first node that answers, masters first. While slot
// is being migrated that is still the source. It blocks until a node
// answers or ctx is done; it fails when slot is out of range, no node
// answers, the slot is not served, or its master is not a node of the
// Cluster.
func (c *Cluster) NodeForSlot(ctx context.Context, slot int) (*Server, error) {
	if slot < 0 || slot >= clusterSlots {
		return nil, fmt.Errorf("redisserver: slot %d out of range 0-%d", slot, clusterSlots-1)
	}
	var errs []error
	for _, s := range c.servers() {
		ranges, err := s.slotRanges(ctx)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		addr := ownerOf(ranges, slot)
		if addr == "" {
			return nil, fmt.Errorf("redisserver: %s: slot %d is not served", s.Addr, slot)
		}
		if n := c.server(addr); n != nil {
			return n, nil
		}
		return nil, fmt.Errorf("redisserver: slot %d is served by %s, not one of %v", slot, addr, c.Addrs)
	}
	return nil, fmt.Errorf("redisserver: slot %d: no node answers: %w", slot, errors.Join(errs...))
}

// OtherMaster returns a master that does not serve slot, a target for
// [Cluster.MigrateSlot]: the one after the slot's master in Nodes. It
// blocks and fails as [Cluster.NodeForSlot] does, and fails too when the
// cluster has a single master.
func (c *Cluster) OtherMaster(ctx context.Context, slot int) (*Server, error) {
	owner, err := c.NodeForSlot(ctx, slot)
	if err != nil {
		return nil, err
	}
	masters := c.Masters()
	i := slices.Index(masters, owner)
	if i < 0 || len(masters) < 2 {
		return nil, fmt.Errorf("redisserver: OtherMaster: no master other than %s in %d masters", owner.Addr, len(masters))
	}
	return masters[(i+1)%len(masters)], nil
}
