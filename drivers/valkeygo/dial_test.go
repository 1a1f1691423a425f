package valkeygo_test

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/scriptlock/scriptlock/drivers/valkeygo"
)

// slowDial marks the context of the call whose dials hang until it ends.
type slowDial struct{}

// TestBorrowedCancel checks that a call whose own context is live does not
// fail with another call's context.Canceled. valkey-go dials each of its
// multiplexed connections on first use, under the context of the call that
// needs it, and hands the outcome to every call waiting for that
// connection; the driver must send those calls again.
func TestBorrowedCancel(t *testing.T) {
	dialing := make(chan struct{}, 1)
	client, err := valkey.NewClient(valkey.ClientOption{
		InitAddress:       []string{redisAddr},
		DisableCache:      true,
		PipelineMultiplex: 3, // 8 connections: the first is dialed by NewClient, the others on use
		DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if ctx.Value(slowDial{}) != nil {
				select {
				case dialing <- struct{}{}:
				default:
				}
				<-ctx.Done()
				return nil, ctx.Err()
			}
			return d.DialContext(ctx, "tcp", addr)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	s := valkeygo.New(client)
	keys := []string{"dial{k}"}

	// One call, under a context of its own, starts a dial that hangs; it
	// may take a few calls before one lands on a connection not dialed yet.
	slowCtx, cancelSlow := context.WithCancel(context.WithValue(context.Background(), slowDial{}, true))
	slowDone := make(chan struct{})
	go func() {
		defer close(slowDone)
		for slowCtx.Err() == nil {
			_, _ = s.Eval(slowCtx, "return 1", keys, nil)
		}
	}()
	select {
	case <-dialing:
	case <-time.After(10 * time.Second):
		t.Fatal("no call of the slow context started a dial")
	}

	// Other calls with live contexts: some wait for the hanging dial.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Go(func() {
			if _, err := s.Eval(ctx, "return 1", keys, nil); err != nil {
				errs <- err
			}
		})
	}
	time.Sleep(100 * time.Millisecond) // let them reach the dial
	cancelSlow()
	<-slowDone
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a call with a live context failed: %v", err)
	}
}
