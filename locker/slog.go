package locker

import (
	"context"
	"errors"
	"log/slog"
)

// SlogObserver returns an Observer that logs every Event to logger as one
// record with the message "scriptlock <kind>" and attributes lock, mode,
// fence, attempts, wait, held, script and err (those that apply). Levels:
// a loss is a warning, and so is any failed operation other than an
// acquisition refused because the lock was held (info); reloads and
// retries are info; grants, releases, extends and wake-ups are debug. A nil
// logger means slog.Default().
func SlogObserver(logger *slog.Logger) Observer {
	if logger == nil {
		logger = slog.Default()
	}
	return func(ctx context.Context, e Event) {
		level := slogLevel(e)
		if !logger.Enabled(ctx, level) {
			return
		}
		attrs := make([]slog.Attr, 0, 8)
		if e.Lock != "" {
			attrs = append(attrs, slog.String("lock", e.Lock))
		}
		if e.Mode != "" {
			attrs = append(attrs, slog.String("mode", e.Mode))
		}
		if e.Fence != 0 {
			attrs = append(attrs, slog.Int64("fence", e.Fence))
		}
		if e.Kind == EventAcquire {
			attrs = append(attrs, slog.Int("attempts", e.Attempts), slog.Duration("wait", e.Wait))
		}
		if e.Kind == EventRelease {
			attrs = append(attrs, slog.Duration("held", e.Held))
		}
		if e.Script != "" {
			attrs = append(attrs, slog.String("script", e.Script))
		}
		if e.Err != nil {
			attrs = append(attrs, slog.String("err", e.Err.Error()))
		}
		logger.LogAttrs(ctx, level, "scriptlock "+e.Kind.String(), attrs...)
	}
}

// slogLevel is the level SlogObserver logs e at.
func slogLevel(e Event) slog.Level {
	switch {
	case e.Kind == EventLoss:
		return slog.LevelWarn
	case e.Kind == EventReload || e.Kind == EventRetry:
		return slog.LevelInfo
	case e.Err == nil:
		return slog.LevelDebug
	case e.Kind == EventAcquire && errors.Is(e.Err, ErrNotObtained):
		return slog.LevelInfo
	}
	return slog.LevelWarn
}
