package redisserver

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
)

// slotRange is one line of CLUSTER SLOTS: slots lo..hi served by the master
// at addr, with the replicas the node lists for it (sorted).
type slotRange struct {
	lo, hi   int
	addr     string
	replicas []string
}

// equal reports whether r and o are the same line.
func (r slotRange) equal(o slotRange) bool {
	return r.lo == o.lo && r.hi == o.hi && r.addr == o.addr && slices.Equal(r.replicas, o.replicas)
}

// String formats r for error messages.
func (r slotRange) String() string {
	return fmt.Sprintf("%d-%d:%s%v", r.lo, r.hi, r.addr, r.replicas)
}

// slotRanges returns s's CLUSTER SLOTS view, sorted by first slot.
func (s *Server) slotRanges(ctx context.Context) ([]slotRange, error) {
	v, err := s.Do(ctx, "CLUSTER", "SLOTS")
	if err != nil {
		return nil, err
	}
	return s.parseSlots(v)
}

// parseSlots parses s's CLUSTER SLOTS reply v, sorted by first slot. A node
// reported without an IP is taken to be on s's host.
func (s *Server) parseSlots(v any) ([]slotRange, error) {
	bad := func() ([]slotRange, error) {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER SLOTS: unexpected reply %#v", s.Addr, v)
	}
	host, _, _ := net.SplitHostPort(s.Addr)
	nodeAddr := func(e any) (string, bool) {
		n, ok := e.([]any)
		if !ok || len(n) < 2 {
			return "", false
		}
		ip, ok1 := n[0].(string)
		port, ok2 := n[1].(int64)
		if ip == "" || ip == "?" {
			ip = host
		}
		return net.JoinHostPort(ip, strconv.FormatInt(port, 10)), ok1 && ok2
	}
	arr, ok := v.([]any)
	if !ok {
		return bad()
	}
	ranges := make([]slotRange, 0, len(arr))
	for _, e := range arr {
		ent, ok := e.([]any)
		if !ok || len(ent) < 3 {
			return bad()
		}
		lo, ok1 := ent[0].(int64)
		hi, ok2 := ent[1].(int64)
		addr, ok3 := nodeAddr(ent[2])
		if !ok1 || !ok2 || !ok3 {
			return bad()
		}
		r := slotRange{lo: int(lo), hi: int(hi), addr: addr}
		for _, n := range ent[3:] {
			a, ok := nodeAddr(n)
			if !ok {
				return bad()
			}
			r.replicas = append(r.replicas, a)
		}
		slices.Sort(r.replicas)
		ranges = append(ranges, r)
	}
	slices.SortFunc(ranges, func(a, b slotRange) int { return a.lo - b.lo })
	return ranges, nil
}

// ownerOf returns the master address that serves slot in ranges, or "".
func ownerOf(ranges []slotRange, slot int) string {
	for _, r := range ranges {
		if r.lo <= slot && slot <= r.hi {
			return r.addr
		}
	}
	return ""
}

// myID returns s's cluster node id (CLUSTER MYID).
func (s *Server) myID(ctx context.Context) (string, error) {
	v, err := s.Do(ctx, "CLUSTER", "MYID")
	if err != nil {
		return "", fmt.Errorf("%s: CLUSTER MYID: %w", s.Addr, err)
	}
	id, ok := v.(string)
	if !ok || id == "" {
		return "", fmt.Errorf("redisserver: %s: CLUSTER MYID: unexpected reply %#v", s.Addr, v)
	}
	return id, nil
}

// nodeState is what one cluster node reports about itself and the cluster.
type nodeState struct {
	info   map[string]string // CLUSTER INFO
	repl   map[string]string // INFO replication
	ranges []slotRange       // CLUSTER SLOTS
}

// role is "master" or "slave".
func (st *nodeState) role() string { return st.repl["role"] }

// masterAddr is a replica's master's host:port.
func (st *nodeState) masterAddr() string {
	return net.JoinHostPort(st.repl["master_host"], st.repl["master_port"])
}

// state asks s for CLUSTER INFO, INFO replication (CLUSTER NODES on an
// external server) and CLUSTER SLOTS over one connection.
func (s *Server) state(ctx context.Context) (*nodeState, error) {
	c, err := dial(ctx, s.Addr, s.dialer)
	if err != nil {
		return nil, fmt.Errorf("redisserver: %s: %w", s.Addr, err)
	}
	defer c.Close()
	var st nodeState
	for _, cmd := range [][]string{{"CLUSTER", "INFO"}, {"INFO", "replication"}, {"CLUSTER", "SLOTS"}} {
		if cmd[0] == "INFO" && s.external {
			// An external node may be reached as an application's user,
			// who may not run INFO (@dangerous): read the roles from
			// CLUSTER NODES, which every user may.
			var err error
			if st.repl, err = s.replFromNodes(ctx, c); err != nil {
				return nil, err
			}
			continue
		}
		v, err := c.do(ctx, cmd...)
		if err != nil {
			return nil, fmt.Errorf("redisserver: %s: %s: %w", s.Addr, strings.Join(cmd, " "), err)
		}
		if cmd[1] == "SLOTS" {
			if st.ranges, err = s.parseSlots(v); err != nil {
				return nil, err
			}
			continue
		}
		str, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("redisserver: %s: %s: unexpected reply %#v", s.Addr, strings.Join(cmd, " "), v)
		}
		if cmd[0] == "INFO" {
			st.repl = parseInfo(str)
		} else {
			st.info = parseInfo(str)
		}
	}
	return &st, nil
}

// nodeLine is one line of CLUSTER NODES.
type nodeLine struct {
	id, addr, masterID string
	flags              []string
	link               string // link-state: "connected" or "disconnected"
}

// healthyReplica reports whether the line is a replica that is reachable
// and not failing.
func (n nodeLine) healthyReplica() bool {
	bad := func(f string) bool { return f == "fail" || f == "fail?" || f == "handshake" || f == "noaddr" }
	return slices.Contains(n.flags, "slave") && !slices.ContainsFunc(n.flags, bad)
}

// replFromNodes returns what state reads from INFO replication (role;
// for a replica master_host, master_port and master_link_status) as
// CLUSTER NODES on c tells it.
func (s *Server) replFromNodes(ctx context.Context, c *conn) (map[string]string, error) {
	v, err := c.do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER NODES: %w", s.Addr, err)
	}
	str, _ := v.(string)
	lines := s.parseNodes(str)
	me := slices.IndexFunc(lines, func(n nodeLine) bool { return slices.Contains(n.flags, "myself") })
	if me < 0 {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER NODES lists no node flagged myself", s.Addr)
	}
	if slices.Contains(lines[me].flags, "master") {
		return map[string]string{"role": "master"}, nil
	}
	repl := map[string]string{"role": "slave", "master_link_status": "down"}
	if lines[me].link == "connected" {
		repl["master_link_status"] = "up"
	}
	if m := slices.IndexFunc(lines, func(n nodeLine) bool { return n.id == lines[me].masterID }); m >= 0 {
		repl["master_host"], repl["master_port"], _ = net.SplitHostPort(lines[m].addr)
	}
	return repl, nil
}

// clusterNodes runs CLUSTER NODES and parses the reply. A node reported
// without an IP is taken to be on s's host.
func (s *Server) clusterNodes(ctx context.Context) ([]nodeLine, error) {
	v, err := s.Do(ctx, "CLUSTER", "NODES")
	if err != nil {
		return nil, err
	}
	str, ok := v.(string)
	if !ok {
		return nil, fmt.Errorf("redisserver: %s: CLUSTER NODES: unexpected reply %#v", s.Addr, v)
	}
	return s.parseNodes(str), nil
}

// parseNodes parses a CLUSTER NODES reply of s.
func (s *Server) parseNodes(str string) []nodeLine {
	host, _, _ := net.SplitHostPort(s.Addr)
	var lines []nodeLine
	for _, l := range strings.Split(str, "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@") // ip:port@cport[,hostname]
		if port, ok := strings.CutPrefix(addr, ":"); ok {
			addr = net.JoinHostPort(host, port)
		}
		n := nodeLine{id: f[0], addr: addr, flags: strings.Split(f[2], ","), masterID: f[3]}
		if len(f) > 7 {
			n.link = f[7]
		}
		lines = append(lines, n)
	}
	return lines
}
