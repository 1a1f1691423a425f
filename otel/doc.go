// Package otel reports scriptlock's lock operations as OpenTelemetry metrics
// and traces. It is its own module, so that the core module
// (github.com/scriptlock/scriptlock/locker) never imports OpenTelemetry.
//
// [Observer] returns a [locker.Observer]; set it as locker.Options.Observer:
//
//	obs, err := otel.Observer(nil) // the global MeterProvider and TracerProvider
//	if err != nil {
//		return err
//	}
//	client, err := locker.New(scripter, &locker.Options{Observer: obs})
//
// The package's name is otel, as its directory; a program that also imports
// go.opentelemetry.io/otel names one of them, for example
// scriptlockotel "github.com/scriptlock/scriptlock/otel".
//
// # Metrics
//
// Names and attributes follow the OpenTelemetry semantic-convention style
// (dotted lower-case names in the scriptlock namespace, durations in
// seconds, counts with a {unit}); the instrumentation scope is [ScopeName].
//
//	scriptlock.lock.acquire.duration  histogram  s          every acquisition (TryLock, Lock, RLock, Downgrade, ...): its wait
//	scriptlock.lock.acquire.attempts  histogram  {attempt}  every acquisition: its acquire calls
//	scriptlock.lock.hold.duration     histogram  s          every Unlock: the time from grant to release
//	scriptlock.lock.extends           counter    {extend}   every Extend, auto-refreshes included
//	scriptlock.lease.lost             counter    {lease}    every lease lost
//	scriptlock.wakeups                counter    {wakeup}   every waiter woken by a release message
//	scriptlock.script.reloads         counter    {reload}   every script loaded again after NOSCRIPT
//	scriptlock.call.retries           counter    {retry}    every call retried after a passing error
//
// Their attributes:
//
//   - scriptlock.lock.mode: mutex, read or write (acquire, hold, extend, lost).
//   - scriptlock.outcome: granted, not_obtained or error (acquire); released,
//     expired, held_by_other or error (hold); extended, expired,
//     held_by_other or error (extend).
//   - scriptlock.loss.cause: expired, held_by_other or other (lost).
//   - scriptlock.script.name: the script (reloads, and retries of a lease
//     call).
//   - error.type: a short, low-cardinality name of a failure (acquire, hold,
//     extend with an outcome other than success or not_obtained, and
//     retries): expired, held_by_other, closed, invalid_argument, timeout,
//     canceled, network, unexpected_reply, a Redis error code such as
//     NOPERM, or _OTHER.
//   - scriptlock.lock.name: the lock's name, on every metric, only when
//     [Options.LockNameAttribute] is set: names are often unbounded (one per
//     invoice, per user), and every distinct name is a new time series.
//
// # Traces
//
// The core reports an operation when it has ended, so spans are recorded
// after the fact with explicit start and end times, as children of the span
// in the operation's context (a root span when there is none):
//
//   - scriptlock.acquire: one per acquisition, from its call to its outcome.
//   - scriptlock.hold: one per Unlock, from the grant to the end of Unlock:
//     it shows how long the lock was held.
//   - scriptlock.extend: one per Extend, a zero-length span at its end (the
//     core does not report how long a call took). Only as a child: an
//     Extend whose context holds no span, such as an auto-refresh,
//     records metrics only.
//   - scriptlock.loss: a zero-length span for a lost lease, unless the
//     loss's context holds a recording span, which then gets an event
//     scriptlock.lease.lost instead. (The core reports losses found by a
//     timer or a refresh with context.Background, so today it is a span.)
//
// A span's status is Error when the operation failed, with the error's
// message as its description; a refused acquisition (not_obtained) is not
// an error. Spans carry the metric attributes above and
// scriptlock.lock.fence (the lease's fence) and scriptlock.lock.acquire.attempts
// where they apply. Without [Options.LockNameAttribute] the lock's name is in
// no attribute, and is cut out of status descriptions where the error's
// message quotes it. Wake-ups, reloads and retries add events
// (scriptlock.wakeup, scriptlock.script.reload, scriptlock.call.retry) to the
// span in their context, when it is recording.
package otel
