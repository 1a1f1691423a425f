package locker_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/scriptlock/scriptlock/locker"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// of the Redis Cluster key-slot function.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// hashTag returns the part of key that Redis Cluster hashes: the substring
// between the first '{' and the first '}' after it when that is non-empty,
// else the whole key. ok reports whether a hash tag was used.
func hashTag(key string) (tag string, ok bool) {
	s := strings.IndexByte(key, '{')
	if s < 0 {
		return key, false
	}
	e := strings.IndexByte(key[s+1:], '}')
	if e <= 0 { // no '}', or an empty tag "{}"
		return key, false
	}
	return key[s+1 : s+1+e], true
}

// keySlot is the Redis Cluster slot of key.
func keySlot(key string) uint16 {
	tag, _ := hashTag(key)
	return crc16([]byte(tag)) % 16384
}

var unescapeName = strings.NewReplacer("%25", "%", "%7B", "{", "%7D", "}")

func TestKeySlotReference(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	assert.Equal(t, uint16(0x31C3), crc16([]byte("123456789")))
	assert.Equal(t, uint16(12182), keySlot("foo"))
	assert.Equal(t, uint16(5061), keySlot("bar"))
	assert.Equal(t, uint16(866), keySlot("hello"))
	assert.Equal(t, keySlot("user1000"), keySlot("{user1000}.following"))
	assert.Equal(t, keySlot("{user1000}.following"), keySlot("{user1000}.followers"))
	assert.Equal(t, crc16([]byte("foo{}{bar}"))%16384, keySlot("foo{}{bar}"))
	assert.Equal(t, keySlot("{bar"), keySlot("foo{{bar}}zap"))
	assert.Equal(t, keySlot("bar"), keySlot("foo{bar}{zap}"))
}

// lockKeys are every key (and the wake channel, which must hash to the
// same slot for SPUBLISH on a Cluster) the core sends to Redis for one name.
type lockKeys struct {
	lock, claim, wake string
	rw                []string // every key of the read-write scripts
	acquire           []string // every key of the acquire script
}

func (k lockKeys) all() []string {
	return append(append([]string{k.claim, k.wake}, k.rw...), k.acquire...)
}

// keysFor runs TryLock, TryRLock and Claim for name through a fresh fake
// and returns the keys they sent. It also checks Client.Key against the
// lock key.
func keysFor(t testing.TB, prefix, name string) lockKeys {
	t.Helper()
	f := newFake()
	c, err := locker.New(f, &locker.Options{Prefix: prefix})
	require.NoError(t, err)
	defer c.Close()
	ctx := testCtx(t)
	m := newMutex(t, c, name, time.Second, nil)
	_, err = m.TryLock(ctx)
	require.NoError(t, err)
	rw, err := c.NewRWMutex(name, time.Second, nil)
	require.NoError(t, err)
	_, err = rw.TryRLock(ctx)
	require.NoError(t, err)
	_, err = c.Claim(ctx, name, time.Second)
	require.NoError(t, err)
	acq, rl, clm := f.runs("acquire"), f.runs("rw_rlock"), f.runs("claim")
	require.Len(t, acq, 1)
	require.Len(t, rl, 1)
	require.Len(t, clm, 1)
	require.Len(t, acq[0].keys, 4)
	require.Len(t, rl[0].keys, 2)
	require.Len(t, clm[0].keys, 1)
	require.Equal(t, acq[0].args[5], rl[0].args[3], "one wake channel per name")
	k := lockKeys{lock: acq[0].keys[0], claim: clm[0].keys[0], rw: rl[0].keys, wake: acq[0].args[5], acquire: acq[0].keys}
	require.Equal(t, c.Key(name), k.lock, "Client.Key must be the key the lock uses")
	return k
}

// checkSameSlot asserts that every key of name carries a hash tag that
// decodes to name and that all of them hash to one slot.
func checkSameSlot(t testing.TB, prefix, name string, k lockKeys) {
	t.Helper()
	wantPrefix := prefix
	if wantPrefix == "" {
		wantPrefix = locker.DefaultPrefix
	}
	slot := keySlot(k.lock)
	for _, key := range k.all() {
		if !strings.HasPrefix(key, wantPrefix+"{") {
			t.Fatalf("key %q of name %q does not start with %q", key, name, wantPrefix+"{")
		}
		tag, ok := hashTag(key)
		if !ok {
			t.Fatalf("key %q of name %q has no non-empty hash tag", key, name)
		}
		if got := unescapeName.Replace(tag); got != name {
			t.Fatalf("hash tag of key %q decodes to %q, want the name %q", key, got, name)
		}
		if s := keySlot(key); s != slot {
			t.Fatalf("name %q: key %q is in slot %d, key %q in slot %d", name, key, s, k.lock, slot)
		}
	}
	want := lockKeys{
		lock: k.lock, claim: k.lock + ":claim", rw: []string{k.lock + ":rw", k.lock + ":rwr"}, wake: k.lock + ":wake",
		acquire: []string{k.lock, k.lock + ":q", k.lock + ":qx", k.lock + ":x"},
	}
	if !reflect.DeepEqual(k, want) {
		t.Fatalf("keys of name %q: got %+v, want %+v", name, k, want)
	}
}

func TestKeysShareSlot(t *testing.T) {
	names := map[string]string{
		"plain":          "orders",
		"close brace":    "}",
		"open brace":     "{",
		"empty tag":      "{}",
		"mixed braces":   "a}b{c",
		"reversed":       "}{",
		"percent":        "%",
		"escape-like":    "%7B",
		"spaces":         "a b  c ",
		"unicode":        "ключ-🔒-鎖",
		"invalid utf8":   "\xff\xfe{",
		"nul":            "a\x00b",
		"colon fence":    "x}:fence",
		"1 KiB":          strings.Repeat("k", 1024),
		"MaxNameLen":     strings.Repeat("n", locker.MaxNameLen),
		"MaxNameLen {":   strings.Repeat("{", locker.MaxNameLen),
		"MaxNameLen mix": strings.Repeat("}%{", locker.MaxNameLen/3),
	}
	for _, prefix := range []string{"", "app:locks:"} {
		for label, name := range names {
			t.Run("prefix="+prefix+"/"+label, func(t *testing.T) {
				checkSameSlot(t, prefix, name, keysFor(t, prefix, name))
			})
		}
	}
}

func TestKeysDistinctNames(t *testing.T) {
	pairs := [][2]string{
		{"%7B", "{"},
		{"%7D", "}"},
		{"%", "%25"},
		{"%257B", "%7B"},
		{"{}", "%7B%7D"},
		{"a", "a:fence"},
		{"a", "a}:fence"},
		{"a", "A"},
		{"a", "a "},
	}
	for _, p := range pairs {
		a, b := keysFor(t, "", p[0]), keysFor(t, "", p[1])
		for _, ka := range a.all() {
			for _, kb := range b.all() {
				assert.NotEqual(t, ka, kb, "names %q and %q share a key", p[0], p[1])
			}
		}
	}
}

func FuzzKeyMapping(f *testing.F) {
	seeds := [][2]string{
		{"{", "%7B"},
		{"}", "%7D"},
		{"%", "%25"},
		{"{}", "}{"},
		{"a}b{c", "a b"},
		{"ключ", "🔒"},
		{"x", "x:fence"},
		{"", "a"},
		{strings.Repeat("{", 100), strings.Repeat("%7B", 100)},
	}
	for _, s := range seeds {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ka, okA := fuzzKeys(t, a)
		kb, okB := fuzzKeys(t, b)
		if okA {
			checkSameSlot(t, "", a, ka)
		}
		if okB {
			checkSameSlot(t, "", b, kb)
		}
		if okA && okB && a != b {
			for _, x := range ka.all() {
				for _, y := range kb.all() {
					if x == y {
						t.Fatalf("names %q and %q share the key %q", a, b, x)
					}
				}
			}
		}
	})
}

// fuzzKeys returns the keys of name, or ok=false after checking that an
// invalid name is rejected with ErrInvalidName before anything is sent.
func fuzzKeys(t *testing.T, name string) (lockKeys, bool) {
	if name != "" && len(name) <= locker.MaxNameLen {
		return keysFor(t, "", name), true
	}
	f := newFake()
	c, err := locker.New(f, nil)
	require.NoError(t, err)
	if _, err := c.NewMutex(name, time.Second, nil); !errors.Is(err, locker.ErrInvalidName) {
		t.Fatalf("NewMutex(%d-byte name): err %v, want ErrInvalidName", len(name), err)
	}
	if _, err := c.NewRWMutex(name, time.Second, nil); !errors.Is(err, locker.ErrInvalidName) {
		t.Fatalf("NewRWMutex(%d-byte name): err %v, want ErrInvalidName", len(name), err)
	}
	if _, err := c.Claim(testCtx(t), name, time.Second); !errors.Is(err, locker.ErrInvalidName) {
		t.Fatalf("Claim(%d-byte key): err %v, want ErrInvalidName", len(name), err)
	}
	if n := f.count(); n != 0 {
		t.Fatalf("invalid name sent %d calls", n)
	}
	return lockKeys{}, false
}
