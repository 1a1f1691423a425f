package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"time"
)

// OneWayDelay is the simulated network's one-way delay: a round trip of
// 500 µs, as between two hosts of one cloud zone. The network rows run
// their clients through a delay proxy (redisserver.StartDelayProxy) that
// adds it to every chunk of bytes in each direction; it spins while a
// chunk is in flight, fine for one client at a time, the scenario it
// serves (many concurrent clients would measure the proxy).
const OneWayDelay = 250 * time.Microsecond

// MeasureRTT returns the median round trip of n PINGs to the server at
// addr (a delay proxy's, to measure what it adds).
func MeasureRTT(ctx context.Context, addr string, n int) (time.Duration, error) {
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	rtts := make([]time.Duration, 0, n)
	buf := make([]byte, 64)
	for range n {
		t0 := time.Now()
		if _, err := c.Write([]byte("PING\r\n")); err != nil {
			return 0, err
		}
		got := 0
		for got < len("+PONG\r\n") {
			k, err := c.Read(buf[got:])
			if err != nil {
				if errors.Is(err, io.EOF) {
					err = io.ErrUnexpectedEOF
				}
				return 0, err
			}
			got += k
		}
		rtts = append(rtts, time.Since(t0))
	}
	slices.Sort(rtts)
	return rtts[len(rtts)/2], nil
}
