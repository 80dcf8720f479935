package llm

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// The idle timeout of a model's reply: a call ends when its reply makes no
// progress — no text, thinking, tool call or end — for the idle time
// (retry.idle, 10 minutes by default: long enough for a Pi to load a model
// and read a long prompt; "off" turns it off). There is no limit on a whole
// reply, so a slow but live one is never cut; a server that accepts and
// then says nothing, or drips empty chunks, ends the turn with a line that
// says so, and headless exits 1.

var ErrReplyIdle = errors.New("the reply made no progress")

type replyWatchKey struct{}

// replyWatch is the timer of one call.
type replyWatch struct {
	mu    sync.Mutex
	timer *time.Timer
	idle  time.Duration
}

// WatchReply is ctx ended with ErrReplyIdle (context.Cause) when the call
// makes no progress for idle (never when idle <= 0); stop releases it.
func WatchReply(ctx context.Context, idle time.Duration) (context.Context, func()) {
	if idle <= 0 {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancelCause(ctx)
	w := &replyWatch{idle: idle}
	w.timer = time.AfterFunc(idle, func() { cancel(ErrReplyIdle) })
	return context.WithValue(ctx, replyWatchKey{}, w), func() {
		w.timer.Stop()
		cancel(nil)
	}
}

// Progressed tells ctx's watch (if any) that the reply moved on.
func Progressed(ctx context.Context) {
	if w, ok := ctx.Value(replyWatchKey{}).(*replyWatch); ok {
		w.mu.Lock()
		w.timer.Reset(w.idle)
		w.mu.Unlock()
	}
}

// IdleError is what a call ended by its watch says.
func IdleError(idle time.Duration) error {
	return fmt.Errorf("the model's server sent nothing new for %s, so the call was ended (retry.idle in your config: a longer time, or off)", idle)
}
