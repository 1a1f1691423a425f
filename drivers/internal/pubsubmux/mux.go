// Package pubsubmux multiplexes sharded pub/sub subscriptions (SSUBSCRIBE)
// over one connection per shard. The go-redis and redigo drivers build
// their locker.Subscriber on it; each supplies a [Transport] that routes a
// channel to its shard and opens raw pub/sub connections, and the Mux does
// the rest: it shares one server subscription among all local subscribers
// of a channel, matches the server's replies to the commands it sent,
// reconnects, resubscribes and follows MOVED replies.
//
// # Servers without sharded pub/sub
//
// Sharded pub/sub arrived in Redis 7.0; Redis 6.2 and miniredis have only
// plain pub/sub, and the scripts publish there with PUBLISH instead of
// SPUBLISH. Each connection starts with SSUBSCRIBE; when the server answers
// it with an unknown-command error ([IsUnknownCommand]), the connection
// remembers that and subscribes that channel, and every later one, with
// SUBSCRIBE (and leaves with UNSUBSCRIBE). The subscription is confirmed
// only once SUBSCRIBE is, so a message published after Subscribe returns
// is still delivered. A new connection (after a loss) asks again, so a
// server upgraded in place is found out. On a Cluster of such servers
// PUBLISH reaches every node, so subscribing on the channel's master, as
// the Mux does anyway, hears it.
//
// # Connections and goroutines
//
// A shard's connection is opened on its first subscription and closed when
// its last subscription goes away. While open it is served by two
// goroutines: a writer, which sends SSUBSCRIBE, SUNSUBSCRIBE and PING and
// reconnects, and a reader, which delivers messages. Nothing else runs in
// the background, so once every subscription is gone no goroutine of the
// Mux remains, as soon as both have noticed (at once, unless a dial in
// progress must first finish or time out).
//
// # Failures
//
// A subscription not yet confirmed fails (Subscribe returns an error) when
// its connection fails, when the server answers SSUBSCRIBE with an error,
// or when no confirmation arrives within [ConfirmTimeout]. A confirmed
// subscription is never dropped: when its connection is lost the Mux calls
// its onMessage at once, with an empty payload (messages may have been
// lost), and again after each
// failed reconnection attempt, reconnects with backoff (50 ms doubling to
// 2 s) for as long as the subscription lasts, routes the channel afresh,
// subscribes again, and calls onMessage once more when the new subscription
// is confirmed. A MOVED reply, or a SUNSUBSCRIBE the server sends by itself
// (the slot migrated, or a failover demoted the node), makes the channel
// follow its slot to the current master the same way. The writer sends
// PING after [HealthInterval] without traffic and drops the connection when
// the PING stays unanswered for another HealthInterval, so a silently dead
// connection is noticed too.
package pubsubmux

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Timing of the Mux; see the package doc.
const (
	// ConfirmTimeout bounds how long Subscribe waits for the server's
	// confirmation, whatever its context.
	ConfirmTimeout = 5 * time.Second
	// HealthInterval is the idle time after which the writer sends PING,
	// and the time it then waits for the reply. The writer checks every
	// second, so a dead connection is noticed within about twice this.
	HealthInterval = 3 * time.Second

	minBackoff    = 50 * time.Millisecond
	maxBackoff    = 2 * time.Second
	routeTimeout  = 5 * time.Second
	redirectDelay = 100 * time.Millisecond
	healthTick    = time.Second
	maxRedirects  = 5 // redirections a pending subscription follows before failing
)

// Cmd is a command the Mux sends on a pub/sub connection.
type Cmd int

// The commands the Mux sends.
const (
	SSubscribe   Cmd = iota + 1 // SSUBSCRIBE channel
	SUnsubscribe                // SUNSUBSCRIBE channel
	Ping                        // PING
	Subscribe                   // SUBSCRIBE channel, where the server has no SSUBSCRIBE
	Unsubscribe                 // UNSUBSCRIBE channel, for a channel subscribed with SUBSCRIBE
)

// String returns the command's name as Redis spells it.
func (c Cmd) String() string {
	switch c {
	case SSubscribe:
		return "SSUBSCRIBE"
	case SUnsubscribe:
		return "SUNSUBSCRIBE"
	case Ping:
		return "PING"
	case Subscribe:
		return "SUBSCRIBE"
	case Unsubscribe:
		return "UNSUBSCRIBE"
	}
	return fmt.Sprintf("Cmd(%d)", int(c))
}

// Kind says what a received [Event] is.
type Kind int

// The kinds of Event a Conn reports; each stands for the sharded push
// message and for its plain pub/sub form.
const (
	Message      Kind = iota + 1 // "smessage" or "message": a message published on Channel
	Subscribed                   // "ssubscribe" or "subscribe": confirmation for Channel
	Unsubscribed                 // "sunsubscribe" or "unsubscribe": reply, or sent by the server when Channel's slot moved
	Pong                         // the reply to PING, in any form ("PONG" or ["pong", ""])
	ErrorReply                   // a server error reply, in Err
)

// Event is one reply or push message read from a pub/sub connection.
type Event struct {
	Kind    Kind
	Channel string // for Message, Subscribed and Unsubscribed
	Payload string // for Message: the message's body, as published
	Err     error  // for ErrorReply: the server's error, e.g. "MOVED 3999 host:port"
}

// Conn is one raw pub/sub connection to a shard, made by [Transport.Dial].
// Send is called by one goroutine at a time and Receive by another one;
// Close may be called concurrently with both and must make a blocked
// Receive return.
type Conn interface {
	// Send writes cmd (with channel, except for Ping) and flushes it. It
	// returns an error when the connection is unusable.
	Send(ctx context.Context, cmd Cmd, channel string) error
	// Receive blocks until the next reply or push message arrives and
	// returns it. It returns an error, and nothing else ever after, once the
	// connection is broken or closed. It must not apply a read timeout of
	// its own: the Mux checks liveness with PING.
	Receive() (Event, error)
	// Close closes the connection.
	Close() error
}

// Transport connects a Mux to one kind of client. Its methods are called
// concurrently, and never while the Mux holds its lock.
type Transport interface {
	// Route returns the key of the shard that serves channel (the same key
	// for every channel of a single server). It may block on the network
	// until ctx is done, for instance to load a Cluster's slot map.
	Route(ctx context.Context, channel string) (shard string, err error)
	// Dial opens a pub/sub connection to the shard named by a key Route
	// returned. It blocks until connected or ctx is done; it may also
	// return a Conn whose first Send or Receive makes the connection.
	Dial(ctx context.Context, shard string) (Conn, error)
	// Stale reports that Route's answer for channel may be out of date,
	// before the Mux routes it again: err is the MOVED or ASK reply to
	// SSUBSCRIBE channel, or nil when the server dropped the subscription
	// by itself (the slot migrated, or the node stopped being its master).
	// It must not block on the network.
	Stale(channel string, err error)
	// Lost reports that a connection to shard failed or could not be made,
	// before the Mux routes its channels again: the node may be gone. It
	// must not block on the network.
	Lost(shard string)
}

// Mux multiplexes sharded subscriptions over one connection per shard. Its
// zero value is not usable; make one with [New]. It is safe for concurrent
// use.
type Mux struct {
	name string
	t    Transport

	mu     sync.Mutex
	shards map[string]*shard // shards with at least one subscription
}

// New returns a Mux over t. name prefixes its error messages ("goredis").
// It starts no goroutine.
func New(name string, t Transport) *Mux {
	return &Mux{name: name, t: t, shards: make(map[string]*shard)}
}

// sub is one Subscribe call's subscription.
type sub struct {
	*Listener

	// Guarded by Mux.mu.
	ch        *channel // nil once unsubscribed or failed
	confirmed bool
}

// channel is the state of one shard channel on its shard; guarded by Mux.mu.
type channel struct {
	name      string
	sh        *shard
	subs      map[*sub]struct{}
	sent      bool      // SSUBSCRIBE (or SUBSCRIBE) is the last command sent for it on the current connection
	cmd       Cmd       // that command: SSubscribe or Subscribe
	seq       uint64    // that command's sequence number
	live      bool      // the server confirmed that SSUBSCRIBE
	lost      bool      // confirmed subs may have missed messages: call them once live again
	moving    bool      // to be routed again before subscribing
	movedAt   time.Time // when a redirection set moving; zero after a connection loss
	redirects int       // redirections since the last confirmation
}

// shard is one connection's worth of channels and the goroutine serving it.
type shard struct {
	m      *Mux
	key    string
	ctx    context.Context // canceled when the last subscription leaves
	cancel context.CancelFunc
	kick   chan struct{} // wakes the writer (capacity 1)

	// Guarded by Mux.mu.
	chans map[string]*channel
	nsubs int
	sess  *session
}

// pending is a command sent on a session and not yet answered.
type pending struct {
	cmd     Cmd
	channel string
	seq     uint64
}

// session is one connection of a shard.
type session struct {
	conn       Conn
	dead       chan struct{} // closed by kill
	readerDone chan struct{}
	once       sync.Once
	err        error // why the session died; read after dead is closed

	// Guarded by Mux.mu.
	fifo     []pending
	seq      uint64
	lastRead time.Time
	pingAt   time.Time // when an unanswered PING was sent; zero if none
	progress bool      // some reply arrived
	broken   bool      // killed: ignore further events
	plain    bool      // the server has no SSUBSCRIBE: subscribe with SUBSCRIBE
}

func (ss *session) kill(err error) {
	ss.once.Do(func() {
		ss.err = err
		close(ss.dead)
	})
}

var errClosing = errors.New("connection closed: no subscription left")

// Subscribe subscribes onMessage to the shard channel; see
// locker.Subscriber for the contract. It blocks until the server confirms
// the subscription (at once if the channel is already subscribed on its
// shard's connection), ctx is done, the subscription fails, or
// ConfirmTimeout passes; it may open the shard's connection, and route the
// channel over the network. On error nothing stays subscribed.
//
// onMessage gets each message's payload, or "" for a spurious call (after
// a connection loss or a server-sent unsubscription, when messages may have
// been lost). It runs on the shard's reader goroutine (or its writer, for
// the calls made after a connection loss), never concurrently with itself,
// and must not block. unsubscribe waits for a call of onMessage in progress to
// return, so onMessage must not call its own subscription's unsubscribe.
func (m *Mux) Subscribe(ctx context.Context, channel string, onMessage func(payload string)) (unsubscribe func(), err error) {
	if onMessage == nil {
		return nil, fmt.Errorf("%s: subscribe %q: nil onMessage", m.name, channel)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	key, err := m.t.Route(ctx, channel)
	if err != nil {
		if cerr := ctx.Err(); cerr != nil && !errors.Is(err, cerr) {
			err = errors.Join(err, cerr)
		}
		return nil, fmt.Errorf("%s: subscribe %q: %w", m.name, channel, err)
	}
	s := &sub{Listener: NewListener(onMessage)}
	m.mu.Lock()
	m.attach(key, channel, s)
	m.mu.Unlock()
	unsubscribe = func() { m.unsubscribe(s) }

	if err := s.Await(ctx, m.name, channel, ConfirmTimeout); err != nil {
		unsubscribe()
		return nil, err
	}
	return unsubscribe, nil
}

// attach adds s to channel name on the shard with key, creating both as
// needed; it returns s if s must be called at once (a confirmed sub moved
// to an already live channel). Called with m.mu held.
func (m *Mux) attach(key, name string, s *sub) (notify []*sub) {
	sh := m.shards[key]
	if sh == nil {
		ctx, cancel := context.WithCancel(context.Background())
		sh = &shard{m: m, key: key, ctx: ctx, cancel: cancel, kick: make(chan struct{}, 1), chans: make(map[string]*channel)}
		m.shards[key] = sh
		go sh.run()
	}
	ch := sh.chans[name]
	if ch == nil {
		ch = &channel{name: name, sh: sh, subs: make(map[*sub]struct{})}
		sh.chans[name] = ch
	}
	ch.subs[s] = struct{}{}
	s.ch = ch
	sh.nsubs++
	switch {
	case ch.live && s.confirmed:
		notify = append(notify, s)
	case ch.live:
		s.confirmed = true
		s.Confirm()
	case s.confirmed:
		ch.lost = true
	}
	sh.poke()
	return notify
}

// detach removes s from its channel, dropping the channel when nothing is
// left to do for it and stopping the shard when it has no subscription
// left. Called with m.mu held.
func (m *Mux) detach(s *sub) {
	ch := s.ch
	if ch == nil {
		return
	}
	s.ch = nil
	delete(ch.subs, s)
	sh := ch.sh
	sh.nsubs--
	if len(ch.subs) == 0 && !ch.sent && sh.chans[ch.name] == ch {
		delete(sh.chans, ch.name)
	}
	if sh.nsubs == 0 {
		sh.cancel()
		if m.shards[sh.key] == sh {
			delete(m.shards, sh.key)
		}
		return
	}
	if len(ch.subs) == 0 {
		sh.poke() // send SUNSUBSCRIBE
	}
}

// fail detaches a subscription that was never confirmed and hands err to
// its Subscribe call. Called with m.mu held.
func (m *Mux) fail(s *sub, err error) {
	m.detach(s)
	s.Fail(err)
}

// unsubscribe ends s. It never blocks on the network; it waits only for a
// call of s.fn in progress.
func (m *Mux) unsubscribe(s *sub) {
	m.mu.Lock()
	m.detach(s)
	m.mu.Unlock()
	s.Stop()
}

// deliver calls each sub's onMessage with payload ("" for a spurious
// call) unless it has been unsubscribed.
func deliver(subs []*sub, payload string) {
	for _, s := range subs {
		s.Deliver(payload)
	}
}

func (sh *shard) poke() {
	select {
	case sh.kick <- struct{}{}:
	default:
	}
}

// run is the shard's writer goroutine: it routes, connects, sends
// commands, checks liveness and reconnects, until the shard's last
// subscription leaves.
func (sh *shard) run() {
	m := sh.m
	var (
		ss      *session
		backoff time.Duration
		retry   *time.Timer
		retryC  <-chan time.Time
	)
	health := time.NewTicker(healthTick)
	defer func() {
		health.Stop()
		if retry != nil {
			retry.Stop()
		}
		if ss != nil {
			sh.teardown(ss, errClosing)
		}
	}()
	for sh.ctx.Err() == nil {
		if d := sh.reroute(); d > 0 && retryC == nil {
			retry = time.NewTimer(d)
			retryC = retry.C
		}
		if sh.ctx.Err() != nil {
			return
		}
		if ss == nil {
			if backoff > 0 && !sleep(sh.ctx, backoff) {
				return
			}
			conn, err := m.t.Dial(sh.ctx, sh.key)
			if err != nil {
				if sh.ctx.Err() != nil {
					return
				}
				sh.lose(fmt.Errorf("connect to %s: %w", sh.display(), err))
				backoff = nextBackoff(backoff)
				continue
			}
			ss = &session{conn: conn, dead: make(chan struct{}), readerDone: make(chan struct{})}
			m.mu.Lock()
			ss.lastRead = time.Now()
			sh.sess = ss
			m.mu.Unlock()
			go sh.read(ss)
		}

		m.mu.Lock()
		cmds := sh.plan(ss)
		m.mu.Unlock()
		sh.send(ss, cmds)

		select {
		case <-sh.kick:
		case <-retryC:
			retryC = nil
		case <-health.C:
			sh.checkHealth(ss)
		case <-ss.dead:
			sh.teardown(ss, nil)
			sh.lose(ss.err)
			if ss.progress { // read without lock: the reader has exited
				backoff = 0
			} else {
				backoff = nextBackoff(backoff)
			}
			ss = nil
		case <-sh.ctx.Done():
		}
	}
}

func (sh *shard) display() string {
	if sh.key == "" {
		return "the server"
	}
	return sh.key
}

func (sh *shard) send(ss *session, cmds []pending) {
	for _, c := range cmds {
		if err := ss.conn.Send(sh.ctx, c.cmd, c.channel); err != nil {
			ss.kill(fmt.Errorf("connection to %s: %w", sh.display(), err))
			return
		}
	}
}

// plan decides the commands to send: SSUBSCRIBE (SUBSCRIBE on a server
// without it) for channels with subscribers and no subscription,
// SUNSUBSCRIBE (UNSUBSCRIBE) for channels whose subscribers all left. It
// records them as pending. Called with m.mu held.
func (sh *shard) plan(ss *session) []pending {
	if ss.broken {
		return nil
	}
	var cmds []pending
	for name, ch := range sh.chans {
		switch {
		case len(ch.subs) == 0:
			if ch.sent {
				ss.seq++
				un := SUnsubscribe
				if ch.cmd == Subscribe {
					un = Unsubscribe
				}
				cmds = append(cmds, pending{un, name, ss.seq})
			}
			delete(sh.chans, name)
		case !ch.sent && !ch.moving:
			ss.seq++
			cmd := SSubscribe
			if ss.plain {
				cmd = Subscribe
			}
			ch.sent, ch.live, ch.cmd, ch.seq = true, false, cmd, ss.seq
			cmds = append(cmds, pending{cmd, name, ss.seq})
		}
	}
	ss.fifo = append(ss.fifo, cmds...)
	return cmds
}

// checkHealth sends PING on an idle connection and kills it when a PING
// stays unanswered for HealthInterval.
func (sh *shard) checkHealth(ss *session) {
	m := sh.m
	now := time.Now()
	var ping []pending
	m.mu.Lock()
	switch {
	case ss.broken:
	case !ss.pingAt.IsZero():
		if now.Sub(ss.pingAt) >= HealthInterval {
			ss.broken = true
			m.mu.Unlock()
			ss.kill(fmt.Errorf("no reply to PING from %s within %v", sh.display(), HealthInterval))
			return
		}
	case now.Sub(ss.lastRead) >= HealthInterval:
		ss.seq++
		ss.pingAt = now
		ping = []pending{{Ping, "", ss.seq}}
		ss.fifo = append(ss.fifo, ping...)
	}
	m.mu.Unlock()
	sh.send(ss, ping)
}

// teardown closes the session's connection and waits for its reader.
func (sh *shard) teardown(ss *session, why error) {
	if why != nil {
		ss.kill(why)
	}
	_ = ss.conn.Close()
	<-ss.readerDone
	sh.m.mu.Lock()
	if sh.sess == ss {
		sh.sess = nil
	}
	sh.m.mu.Unlock()
}

// lose handles the loss of the shard's connection (or a failed connection
// attempt): subscriptions not yet confirmed fail with err, confirmed ones
// are called at once and marked for another call when subscribed again,
// and every channel is routed again before the next SSUBSCRIBE.
func (sh *shard) lose(err error) {
	m := sh.m
	m.t.Lost(sh.key)
	var notify []*sub
	m.mu.Lock()
	for name, ch := range sh.chans {
		ch.sent, ch.live = false, false
		for s := range ch.subs {
			if s.confirmed {
				notify = append(notify, s)
				ch.lost = true
			} else {
				m.fail(s, fmt.Errorf("%s: subscribe %q: %w", m.name, name, err))
			}
		}
		if len(ch.subs) == 0 {
			delete(sh.chans, name)
			continue
		}
		ch.moving, ch.movedAt = true, time.Time{}
	}
	m.mu.Unlock()
	deliver(notify, "")
}

// reroute routes again the channels marked moving: a channel now served by
// another shard moves there with its subscriptions. It returns how long to
// wait before trying again, or 0 if no channel waits.
func (sh *shard) reroute() (again time.Duration) {
	m := sh.m
	m.mu.Lock()
	var names []string
	for name, ch := range sh.chans {
		if ch.moving {
			names = append(names, name)
		}
	}
	m.mu.Unlock()

	for _, name := range names {
		ctx, cancel := context.WithTimeout(sh.ctx, routeTimeout)
		key, err := m.t.Route(ctx, name)
		cancel()
		var notify []*sub
		m.mu.Lock()
		ch := sh.chans[name]
		switch {
		case ch == nil || !ch.moving:
		case err != nil:
			// Pending subscriptions fail; confirmed ones wait for the retry.
			for s := range ch.subs {
				if !s.confirmed {
					m.fail(s, fmt.Errorf("%s: subscribe %q: %w", m.name, name, err))
				}
			}
			if len(ch.subs) > 0 {
				again = maxBackoff
			}
		case key == sh.key:
			// Still routed here: after a redirection, give the routing a
			// moment to catch up before asking this shard again.
			delay := redirectDelay << min(max(ch.redirects-1, 0), 4) // 100 ms doubling to 1.6 s
			if wait := delay - time.Since(ch.movedAt); !ch.movedAt.IsZero() && wait > 0 {
				again = max(again, wait)
			} else {
				ch.moving = false
			}
		default:
			delete(sh.chans, name)
			subs := make([]*sub, 0, len(ch.subs))
			for s := range ch.subs {
				subs = append(subs, s)
			}
			for _, s := range subs {
				m.detach(s)
				notify = append(notify, m.attach(key, name, s)...)
			}
		}
		m.mu.Unlock()
		deliver(notify, "") // moved to a live channel: messages may have been lost
	}
	return again
}

// read is a session's reader goroutine.
func (sh *shard) read(ss *session) {
	defer close(ss.readerDone)
	m := sh.m
	for {
		ev, err := ss.conn.Receive()
		if err != nil {
			ss.kill(fmt.Errorf("connection to %s: %w", sh.display(), err))
			return
		}
		m.mu.Lock()
		if ss.broken {
			m.mu.Unlock()
			continue
		}
		ss.lastRead = time.Now()
		ss.progress = true
		notify, stale, perr := sh.handle(ss, ev)
		if perr != nil {
			ss.broken = true
		}
		m.mu.Unlock()
		if stale != "" {
			m.t.Stale(stale, ev.Err) // nil for a server-sent sunsubscribe
		}
		payload := "" // a spurious call, unless ev is a message
		if ev.Kind == Message {
			payload = ev.Payload
		}
		deliver(notify, payload)
		if perr != nil {
			ss.kill(perr)
		}
	}
}

// handle applies one event to the shard's state. It returns the subs to
// call, the channel whose routing may be stale (if any), and an error when
// the connection must be dropped. Called with m.mu held.
func (sh *shard) handle(ss *session, ev Event) (notify []*sub, stale string, err error) {
	m := sh.m
	switch ev.Kind {
	case Message:
		if ch := sh.chans[ev.Channel]; ch != nil {
			for s := range ch.subs {
				if s.confirmed {
					notify = append(notify, s)
				}
			}
		}

	case Subscribed:
		p, ok := ss.pop()
		if !ok || (p.cmd != SSubscribe && p.cmd != Subscribe) || p.channel != ev.Channel {
			return nil, "", unexpected(ev, p, ok)
		}
		ch := sh.chans[p.channel]
		if ch == nil || !ch.sent || ch.seq != p.seq {
			break // a later command for the channel supersedes this one
		}
		ch.live, ch.redirects = true, 0
		for s := range ch.subs {
			if !s.confirmed {
				s.confirmed = true
				s.ready <- nil
			} else if ch.lost {
				notify = append(notify, s)
			}
		}
		ch.lost = false

	case Unsubscribed:
		if p, ok := ss.peek(); ok && (p.cmd == SUnsubscribe || p.cmd == Unsubscribe) && p.channel == ev.Channel {
			ss.pop()
			break
		}
		// Sent by the server: the channel's slot has moved away, or the
		// node is no longer its master. Route the channel again (a replica
		// would accept SSUBSCRIBE, but it hears only what its master
		// forwards) and subscribe again, wherever that leads.
		ch := sh.chans[ev.Channel]
		if ch == nil || !ch.sent {
			break
		}
		ch.sent, ch.live = false, false
		ch.moving, ch.movedAt = true, time.Now()
		stale = ch.name
		for s := range ch.subs {
			if s.confirmed {
				notify = append(notify, s)
				ch.lost = true
			}
		}
		sh.poke()

	case Pong:
		p, ok := ss.pop()
		if !ok || p.cmd != Ping {
			return nil, "", unexpected(ev, p, ok)
		}
		ss.pingAt = time.Time{}

	case ErrorReply:
		p, ok := ss.pop()
		if !ok {
			return nil, "", unexpected(ev, p, ok)
		}
		switch p.cmd {
		case Ping:
			ss.pingAt = time.Time{} // an answer all the same
		case SSubscribe, Subscribe:
			unknown := p.cmd == SSubscribe && IsUnknownCommand(ev.Err)
			if unknown {
				// No sharded pub/sub on this server (Redis 6.2,
				// miniredis): the scripts publish with PUBLISH there.
				ss.plain = true
			}
			ch := sh.chans[p.channel]
			if ch == nil || !ch.sent || ch.seq != p.seq {
				break
			}
			ch.sent, ch.live = false, false
			if unknown {
				sh.poke() // subscribe again, with SUBSCRIBE
				break
			}
			serr := fmt.Errorf("%s: %v %q: %w", m.name, p.cmd, p.channel, ev.Err)
			if isRedirect(ev.Err) {
				stale = p.channel
				ch.redirects++
				ch.moving, ch.movedAt = true, time.Now()
				if ch.redirects > maxRedirects {
					for s := range ch.subs {
						if !s.confirmed {
							m.fail(s, serr)
						}
					}
				}
				sh.poke()
				break
			}
			for s := range ch.subs {
				if !s.confirmed {
					m.fail(s, serr)
				}
			}
			if len(ch.subs) > 0 {
				// Confirmed subscribers cannot be failed: start over on a
				// new connection, with backoff.
				for s := range ch.subs {
					notify = append(notify, s)
				}
				ch.lost = true
				return notify, "", serr
			}
		}

	default:
		return nil, "", fmt.Errorf("unknown event kind %d", ev.Kind)
	}
	return notify, stale, nil
}

func (ss *session) peek() (pending, bool) {
	if len(ss.fifo) == 0 {
		return pending{}, false
	}
	return ss.fifo[0], true
}

func (ss *session) pop() (pending, bool) {
	p, ok := ss.peek()
	if ok {
		ss.fifo[0] = pending{}
		ss.fifo = ss.fifo[1:]
	}
	return p, ok
}

// unexpected describes a reply that does not match the pending command.
func unexpected(ev Event, p pending, ok bool) error {
	want := "no reply"
	if ok {
		want = "the reply to " + p.cmd.String() + " " + p.channel
	}
	return fmt.Errorf("protocol out of step: got %s, want %s", describe(ev), want)
}

func describe(ev Event) string {
	switch ev.Kind {
	case Subscribed:
		return fmt.Sprintf("ssubscribe %q", ev.Channel)
	case Unsubscribed:
		return fmt.Sprintf("sunsubscribe %q", ev.Channel)
	case Pong:
		return "pong"
	case ErrorReply:
		return fmt.Sprintf("error %q", ev.Err)
	}
	return fmt.Sprintf("event %d", ev.Kind)
}

// IsUnknownCommand reports whether err is a server's reply to a command it
// does not have ("ERR unknown command `ssubscribe`, with args ..."), as
// Redis before 7.0 and miniredis answer SSUBSCRIBE.
// Some clients drop the "ERR " prefix from the message (rueidis does).
func IsUnknownCommand(err error) bool {
	if err == nil {
		return false
	}
	msg := strings.TrimPrefix(strings.ToLower(err.Error()), "err ")
	return strings.HasPrefix(msg, "unknown command")
}

// isRedirect reports whether err is a MOVED or ASK reply.
func isRedirect(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// Redirect parses a MOVED or ASK error ("MOVED 3999 127.0.0.1:6381") into
// its slot and address; ok is false for any other error.
func Redirect(err error) (slot int, addr string, ok bool) {
	if !isRedirect(err) {
		return 0, "", false
	}
	f := strings.Fields(err.Error())
	if len(f) != 3 {
		return 0, "", false
	}
	if _, serr := fmt.Sscanf(f[1], "%d", &slot); serr != nil {
		return 0, "", false
	}
	return slot, f[2], true
}

func nextBackoff(d time.Duration) time.Duration {
	if d == 0 {
		return minBackoff
	}
	return min(2*d, maxBackoff)
}

// sleep waits for d or until ctx is done; it reports whether d passed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
