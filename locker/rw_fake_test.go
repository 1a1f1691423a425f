package locker_test

// An in-memory emulation of the rw_*.lua scripts for the fake Scripter, so
// the RWMutex's Go logic can be unit-tested like the Mutex's. It follows
// the scripts' hash layout and replies; real-Redis behaviour is checked by
// rw_redis_test.go and the conformance suite. Time is a manual clock that
// tests advance; it is not this process's clock.

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// rwField is one hold or intent field: its absolute expiry and owner.
type rwField struct {
	exp   int64
	owner string
}

// rwEmu emulates the read-write lock scripts over fake's emu (whose fence
// counters it shares, as the scripts share the mutex's counter).
type rwEmu struct {
	e *emu

	mu     sync.Mutex
	now    int64
	hashes map[string]map[string]rwField // by KEYS[1]
	fences map[string]int64              // the 'f' field, by KEYS[1]
	pubs   map[string]int                // SPUBLISH count by channel
	errs   []error                       // calls the emulation rejected
	gone   map[string]bool               // hold fields of abandoned calls
}

// withRW makes f answer the rw_* scripts from an emulation and returns it.
// Earlier reply hooks of f keep precedence.
func withRW(f *fakeScripter) *rwEmu {
	r := &rwEmu{e: f.emu, now: 1, hashes: map[string]map[string]rwField{}, fences: map[string]int64{}, pubs: map[string]int{}, gone: map[string]bool{}}
	prev := f.reply
	f.reply = func(c call) (any, bool) {
		if prev != nil {
			if v, ok := prev(c); ok {
				return v, true
			}
		}
		if !strings.HasPrefix(c.name, "rw_") {
			return nil, false
		}
		v, err := r.run(c.name, c.keys, c.args)
		if err != nil {
			r.mu.Lock()
			r.errs = append(r.errs, err)
			r.mu.Unlock()
			return err, true // not a reply the core accepts: ErrUnexpectedReply
		}
		return v, true
	}
	return r
}

// newRWFake returns a warm fake that emulates the RW scripts too.
func newRWFake() (*fakeScripter, *rwEmu) {
	f := newFake()
	return f, withRW(f)
}

// advance moves the emulated server clock by ms.
func (r *rwEmu) advance(ms int64) {
	r.mu.Lock()
	r.now += ms
	r.mu.Unlock()
}

// fields returns a copy of the live fields of hash key.
func (r *rwEmu) fields(key string) map[string]rwField {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]rwField{}
	for k, v := range r.hashes[key] {
		if v.exp > r.now {
			out[k] = v
		}
	}
	return out
}

// published returns how often channel was published on.
func (r *rwEmu) published(channel string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.pubs[channel]
}

// errors returns the calls the emulation rejected.
func (r *rwEmu) errors() []error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]error(nil), r.errs...)
}

// rwState is one script run's view of a hash, as the Lua prelude builds it.
type rwState struct {
	r                *rwEmu
	key              string
	live             map[string]rwField
	hadW, hadR, hadI bool
}

func (r *rwEmu) load(key string) *rwState {
	st := &rwState{r: r, key: key, live: map[string]rwField{}}
	h := r.hashes[key]
	for k, v := range h {
		switch k[0] {
		case 'w':
			st.hadW = true
		case 'r':
			st.hadR = true
		case 'i':
			st.hadI = true
		}
		if v.exp > r.now {
			st.live[k] = v
		} else {
			delete(h, k)
		}
	}
	return st
}

func (st *rwState) put(k string, exp int64, owner string) {
	st.live[k] = rwField{exp, owner}
	h := st.r.hashes[st.key]
	if h == nil {
		h = map[string]rwField{}
		st.r.hashes[st.key] = h
	}
	h[k] = rwField{exp, owner}
}

func (st *rwState) drop(k string) {
	delete(st.live, k)
	delete(st.r.hashes[st.key], k)
}

func (st *rwState) writer() (string, bool) {
	for k, v := range st.live {
		if k[0] == 'w' {
			return v.owner, true
		}
	}
	return "", false
}

// count counts live fields of kind, all owners or only those of owner.
func (st *rwState) count(kind byte, owner *string) int {
	n := 0
	for k, v := range st.live {
		if k[0] == kind && (owner == nil || v.owner == *owner) {
			n++
		}
	}
	return n
}

func (st *rwState) stale(owner, hold string) int64 {
	for k, v := range st.live {
		if v.owner != owner && (k[0] == 'w' || (k[0] == 'r' && hold[0] == 'w')) {
			return -1
		}
	}
	return 0
}

func (st *rwState) finish(wake string) int64 {
	nw, nr, ni := st.count('w', nil), st.count('r', nil), st.count('i', nil)
	var last int64
	for _, v := range st.live {
		last = max(last, v.exp)
	}
	if ((st.hadW || st.hadR) && nw+nr == 0) || ((st.hadW || st.hadI) && nw+ni == 0) {
		st.r.pubs[wake]++
	}
	if last == 0 {
		delete(st.r.hashes, st.key)
		delete(st.r.fences, st.key)
		return 0
	}
	return last - st.r.now
}

func (r *rwEmu) run(name string, keys, args []string) (any, error) {
	need := map[string][2]int{
		"rw_rlock": {3, 3}, "rw_lock": {3, 4}, "rw_release": {2, 2}, "rw_extend": {2, 3},
		"rw_pttl": {2, 2}, "rw_downgrade": {2, 4}, "rw_cancel": {2, 4},
	}[name]
	if need == [2]int{} || len(keys) != need[0] || len(args) != need[1] {
		return nil, fmt.Errorf("fake: %s called with %d keys and %d args, want %v", name, len(keys), len(args), need)
	}
	if !strings.HasSuffix(keys[0], ":rw") || !strings.HasSuffix(keys[len(keys)-1], ":wake") {
		return nil, fmt.Errorf("fake: %s: keys %q", name, keys)
	}
	ttl := int64(0)
	if len(args) > 2 && name != "rw_cancel" {
		var err error
		if ttl, err = strconv.ParseInt(args[2], 10, 64); err != nil || ttl <= 0 {
			return nil, fmt.Errorf("fake: %s: bad ttl %q", name, args[2])
		}
	}
	r.e.mu.Lock() // the fence counters are the mutex emulation's
	defer r.e.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.load(keys[0])
	wake := keys[len(keys)-1]
	owner, hold := args[0], args[1]
	now := r.now
	if len(st.live) == 0 { // the key expired with its last field, 'f' included
		delete(r.fences, keys[0])
	}
	fence, hasFence := r.fences[keys[0]]
	if (name == "rw_rlock" || name == "rw_lock") && r.gone[hold] {
		return []any{int64(0), int64(0)}, nil
	}
	switch name {
	case "rw_rlock":
		if !strings.HasPrefix(hold, "r:") {
			return nil, fmt.Errorf("fake: rw_rlock: hold %q", hold)
		}
		w, hasW := st.writer()
		h, hasH := st.live[hold]
		inside := (hasW && w == owner) || st.count('r', &owner) > 0
		var wait int64
		for k, b := range st.live {
			if (k[0] == 'w' && b.owner != owner) || (k[0] == 'i' && !inside) || (k == hold && b.owner != owner) {
				wait = max(wait, b.exp-now)
			}
		}
		if wait > 0 {
			st.finish(wake)
			return []any{int64(0), wait}, nil
		}
		exp := now + ttl
		if hasH && h.exp > exp {
			exp = h.exp
		}
		st.put(hold, exp, owner)
		if !hasFence {
			fence = r.e.fences[keys[1]]
			r.fences[keys[0]] = fence
		}
		st.finish(wake)
		return []any{int64(1), fence}, nil
	case "rw_lock":
		intent := args[3]
		if !strings.HasPrefix(hold, "w:") || (intent != "" && !strings.HasPrefix(intent, "i:")) {
			return nil, fmt.Errorf("fake: rw_lock: hold %q intent %q", hold, intent)
		}
		w, hasW := st.writer()
		if hasW && w == owner {
			exp := now + ttl
			if h, ok := st.live[hold]; ok && h.exp > exp {
				exp = h.exp
			}
			st.put(hold, exp, owner)
			if intent != "" {
				st.drop(intent)
			}
			st.finish(wake)
			return []any{int64(1), fence}, nil
		}
		var wait int64
		for k, b := range st.live {
			if k[0] == 'w' || k[0] == 'r' {
				wait = max(wait, b.exp-now)
			}
		}
		if wait > 0 {
			if intent != "" {
				st.put(intent, now+ttl, "")
				wait = min(wait, max(1, ttl/2))
			}
			st.finish(wake)
			return []any{int64(0), wait}, nil
		}
		r.e.fences[keys[1]]++
		fence = r.e.fences[keys[1]]
		r.fences[keys[0]] = fence
		st.put(hold, now+ttl, owner)
		if intent != "" {
			st.drop(intent)
		}
		st.finish(wake)
		return []any{int64(1), fence}, nil
	case "rw_release", "rw_extend", "rw_pttl":
		h, ok := st.live[hold]
		if ok && h.owner == owner {
			switch name {
			case "rw_release":
				st.drop(hold)
				st.finish(wake)
				return int64(1), nil
			case "rw_extend":
				st.put(hold, now+ttl, owner)
				st.finish(wake)
				return int64(1), nil
			}
			st.finish(wake)
			return []any{int64(1), h.exp - now}, nil
		}
		s := st.stale(owner, hold)
		st.finish(wake)
		if name == "rw_pttl" {
			return []any{s, int64(0)}, nil
		}
		return s, nil
	case "rw_downgrade":
		read := args[3]
		if !strings.HasPrefix(hold, "w:") || !strings.HasPrefix(read, "r:") {
			return nil, fmt.Errorf("fake: rw_downgrade: holds %q %q", hold, read)
		}
		h, hasH := st.live[hold]
		rd, hasR := st.live[read]
		hasR = hasR && rd.owner == owner
		if hasH && h.owner == owner {
			st.drop(hold)
			exp := now + ttl
			if hasR && rd.exp > exp {
				exp = rd.exp
			}
			st.put(read, exp, owner)
			st.finish(wake)
			return []any{int64(1), fence}, nil
		}
		if hasR {
			st.finish(wake)
			return []any{int64(1), fence}, nil
		}
		s := st.stale(owner, hold)
		st.finish(wake)
		return []any{s, int64(0)}, nil
	case "rw_cancel":
		if hold != "" && args[3] != "0" {
			r.gone[hold] = true
		}
		intent := args[2]
		if strings.HasPrefix(intent, "i:") {
			st.drop(intent)
		}
		if h, ok := st.live[hold]; hold != "" && ok && h.owner == owner {
			st.drop(hold)
		}
		st.finish(wake)
		return int64(1), nil
	}
	return nil, fmt.Errorf("fake: no emulation for %s", name)
}
