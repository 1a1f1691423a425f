package bench

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"github.com/valkey-io/valkey-go"
)

// rawRelease is the reference's compare-and-delete: DEL only while the
// key still holds the caller's token. Reply 1 released, 0 not held.
const rawRelease = `if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`

// rawPoll is the pause of the reference's Lock between two attempts.
const rawPoll = time.Millisecond

// rawOps is what the reference needs of a driver: SET key token NX PX TTL
// and EVALSHA of rawRelease.
type rawOps interface {
	setNX(ctx context.Context, key, token string) (bool, error)
	release(ctx context.Context, key, token string) (int64, error)
}

// rawLocker is the hand-written reference: the two-round-trip floor every
// Redis lock pays (SET NX PX to acquire, compare-and-delete to release),
// with a 128-bit token from crypto/rand and nothing else: no fencing, no
// reentrancy, no reply translation layer.
type rawLocker struct{ ops rawOps }

func (r rawLocker) TryLock(ctx context.Context, key string) (Unlocker, bool, error) {
	tok := rawToken()
	ok, err := r.ops.setNX(ctx, key, tok)
	if err != nil || !ok {
		return nil, false, err
	}
	return &rawLease{ops: r.ops, key: key, token: tok}, true, nil
}

// Lock polls TryLock every rawPoll until acquired or ctx is done. The
// reference has no waiting policy worth measuring; it is not run in the
// contended scenario, and on free keys Lock is one SET.
func (r rawLocker) Lock(ctx context.Context, key string) (Unlocker, error) {
	for {
		u, ok, err := r.TryLock(ctx, key)
		if err != nil {
			return nil, err
		}
		if ok {
			return u, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(rawPoll):
		}
	}
}

type rawLease struct {
	ops        rawOps
	key, token string
}

func (l *rawLease) Unlock(ctx context.Context) error {
	n, err := l.ops.release(ctx, l.key, l.token)
	if err != nil {
		return err
	}
	if n != 1 {
		return fmt.Errorf("raw: %q: lock not held", l.key)
	}
	return nil
}

// rawToken returns 128 random bits from crypto/rand, base64url-encoded, as
// scriptlock's tokens are.
func rawToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// RawGoRedis returns the raw reference on a go-redis client: SetNX with
// TTL, and EvalSha of the compare-and-delete script, which it loads now
// (one round trip, bounded by ctx).
func RawGoRedis(ctx context.Context, c goredis.UniversalClient) (Locker, error) {
	sha, err := c.ScriptLoad(ctx, rawRelease).Result()
	if err != nil {
		return nil, fmt.Errorf("raw goredis: SCRIPT LOAD: %w", err)
	}
	return rawLocker{goredisRaw{c: c, sha: sha}}, nil
}

type goredisRaw struct {
	c   goredis.UniversalClient
	sha string
}

func (g goredisRaw) setNX(ctx context.Context, key, token string) (bool, error) {
	return g.c.SetNX(ctx, key, token, TTL).Result()
}

func (g goredisRaw) release(ctx context.Context, key, token string) (int64, error) {
	return g.c.EvalSha(ctx, g.sha, []string{key}, token).Int64()
}

// RawRedigo returns the raw reference on a redigo pool, whose connections
// must implement redis.ConnWithContext: SET NX PX and EVALSHA of the
// compare-and-delete script, which it loads now (bounded by ctx).
func RawRedigo(ctx context.Context, p *redigo.Pool) (Locker, error) {
	conn, err := p.GetContext(ctx)
	if err != nil {
		return nil, fmt.Errorf("raw redigo: %w", err)
	}
	defer conn.Close()
	sha, err := redigo.String(redigo.DoContext(conn, ctx, "SCRIPT", "LOAD", rawRelease))
	if err != nil {
		return nil, fmt.Errorf("raw redigo: SCRIPT LOAD: %w", err)
	}
	return rawLocker{redigoRaw{p: p, sha: sha}}, nil
}

type redigoRaw struct {
	p   *redigo.Pool
	sha string
}

func (r redigoRaw) setNX(ctx context.Context, key, token string) (bool, error) {
	conn, err := r.p.GetContext(ctx)
	if err != nil {
		return false, err
	}
	defer conn.Close()
	_, err = redigo.String(redigo.DoContext(conn, ctx, "SET", key, token, "NX", "PX", TTL.Milliseconds()))
	if errors.Is(err, redigo.ErrNil) {
		return false, nil
	}
	return err == nil, err
}

func (r redigoRaw) release(ctx context.Context, key, token string) (int64, error) {
	conn, err := r.p.GetContext(ctx)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	return redigo.Int64(redigo.DoContext(conn, ctx, "EVALSHA", r.sha, 1, key, token))
}

// RawRueidis returns the raw reference on a rueidis client: SET NX PX and
// EVALSHA of the compare-and-delete script, which it loads now on every
// node the client knows (bounded by ctx).
func RawRueidis(ctx context.Context, c rueidis.Client) (Locker, error) {
	var sha string
	for addr, n := range c.Nodes() {
		s, err := n.Do(ctx, n.B().ScriptLoad().Script(rawRelease).Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("raw rueidis: SCRIPT LOAD on %s: %w", addr, err)
		}
		sha = s
	}
	if sha == "" {
		return nil, errors.New("raw rueidis: SCRIPT LOAD: the client knows no node")
	}
	return rawLocker{rueidisRaw{c: c, sha: sha}}, nil
}

type rueidisRaw struct {
	c   rueidis.Client
	sha string
}

func (r rueidisRaw) setNX(ctx context.Context, key, token string) (bool, error) {
	err := r.c.Do(ctx, r.c.B().Set().Key(key).Value(token).Nx().PxMilliseconds(TTL.Milliseconds()).Build()).Error()
	if rueidis.IsRedisNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (r rueidisRaw) release(ctx context.Context, key, token string) (int64, error) {
	return r.c.Do(ctx, r.c.B().Evalsha().Sha1(r.sha).Numkeys(1).Key(key).Arg(token).Build()).AsInt64()
}

// RawValkeyGo returns the raw reference on a valkey-go client, as
// RawRueidis does on rueidis: SET NX PX and EVALSHA of the
// compare-and-delete script, which it loads now on every node the client
// knows (bounded by ctx).
func RawValkeyGo(ctx context.Context, c valkey.Client) (Locker, error) {
	var sha string
	for addr, n := range c.Nodes() {
		s, err := n.Do(ctx, n.B().ScriptLoad().Script(rawRelease).Build()).ToString()
		if err != nil {
			return nil, fmt.Errorf("raw valkeygo: SCRIPT LOAD on %s: %w", addr, err)
		}
		sha = s
	}
	if sha == "" {
		return nil, errors.New("raw valkeygo: SCRIPT LOAD: the client knows no node")
	}
	return rawLocker{valkeygoRaw{c: c, sha: sha}}, nil
}

type valkeygoRaw struct {
	c   valkey.Client
	sha string
}

func (r valkeygoRaw) setNX(ctx context.Context, key, token string) (bool, error) {
	err := r.c.Do(ctx, r.c.B().Set().Key(key).Value(token).Nx().PxMilliseconds(TTL.Milliseconds()).Build()).Error()
	if valkey.IsValkeyNil(err) {
		return false, nil
	}
	return err == nil, err
}

func (r valkeygoRaw) release(ctx context.Context, key, token string) (int64, error) {
	return r.c.Do(ctx, r.c.B().Evalsha().Sha1(r.sha).Numkeys(1).Key(key).Arg(token).Build()).AsInt64()
}
