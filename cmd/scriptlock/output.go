package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/scriptlock/scriptlock/locker"
)

// stateJSON is the JSON form of a locker.LockState. Durations are in
// milliseconds; owners and waiters are fingerprints ("" for none).
type stateJSON struct {
	Name       string    `json:"name"`
	ServerTime time.Time `json:"server_time"`
	Free       bool      `json:"free"`
	Mutex      mutexJSON `json:"mutex"`
	RW         rwJSON    `json:"rw"`
}

type mutexJSON struct {
	Held      bool   `json:"held"`
	Fence     int64  `json:"fence"`
	TTLMS     int64  `json:"ttl_ms"`
	Holds     int    `json:"holds"`
	Owner     string `json:"owner"`
	Queue     int    `json:"queue"`
	QueueHead string `json:"queue_head"`
}

type rwJSON struct {
	Readers        int    `json:"readers"`
	ReaderOwners   int    `json:"reader_owners"`
	ReadTTLMS      int64  `json:"read_ttl_ms"`
	Writer         bool   `json:"writer"`
	WriterHolds    int    `json:"writer_holds"`
	WriterFence    int64  `json:"writer_fence"`
	WriterTTLMS    int64  `json:"writer_ttl_ms"`
	WriterOwner    string `json:"writer_owner"`
	WaitingWriters int    `json:"waiting_writers"`
	LastWriteFence int64  `json:"last_write_fence"`
}

func toJSON(s locker.LockState) stateJSON {
	return stateJSON{
		Name: s.Name, ServerTime: s.ServerTime.UTC(), Free: s.Free(),
		Mutex: mutexJSON{
			Held: s.Mutex.Held, Fence: s.Mutex.Fence, TTLMS: s.Mutex.TTL.Milliseconds(), Holds: s.Mutex.Holds,
			Owner: s.Mutex.Owner, Queue: s.Mutex.Queue, QueueHead: s.Mutex.QueueHead,
		},
		RW: rwJSON{
			Readers: s.RW.Readers, ReaderOwners: s.RW.ReaderOwners, ReadTTLMS: s.RW.ReadTTL.Milliseconds(),
			Writer: s.RW.Writer, WriterHolds: s.RW.WriterHolds, WriterFence: s.RW.WriterFence,
			WriterTTLMS: s.RW.WriterTTL.Milliseconds(), WriterOwner: s.RW.WriterOwner,
			WaitingWriters: s.RW.WaitingWriters, LastWriteFence: s.RW.LastWriteFence,
		},
	}
}

// writeJSON prints v as one line of JSON.
func writeJSON(w io.Writer, v any) error {
	return json.NewEncoder(w).Encode(v)
}

// statesJSON is the JSON form of several states: always an array.
func statesJSON(ss []locker.LockState) []stateJSON {
	out := make([]stateJSON, 0, len(ss))
	for _, s := range ss {
		out = append(out, toJSON(s))
	}
	return out
}

// display prints a lock name, quoted when it holds characters a terminal
// would not show as they are (or spaces).
func display(name string) string {
	for _, r := range name {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return strconv.Quote(name)
		}
	}
	return name
}

// ttl prints a remaining time in milliseconds precision.
func ttl(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// dash prints s, or "-" when empty.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeState prints one lock's state as an indented block.
func writeState(w io.Writer, s locker.LockState) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n", display(s.Name))
	m := s.Mutex
	if m.Held {
		fmt.Fprintf(&b, "  mutex   held  fence %d  ttl %s  holds %d  owner %s\n", m.Fence, ttl(m.TTL), m.Holds, m.Owner)
	} else {
		fmt.Fprintf(&b, "  mutex   free\n")
	}
	if m.Queue > 0 {
		fmt.Fprintf(&b, "  queue   %d waiting  head %s\n", m.Queue, m.QueueHead)
	} else {
		fmt.Fprintf(&b, "  queue   empty\n")
	}
	r := s.RW
	switch {
	case r.Writer:
		fmt.Fprintf(&b, "  rwlock  write-held  fence %d  ttl %s  holds %d  owner %s\n", r.WriterFence, ttl(r.WriterTTL), r.WriterHolds, r.WriterOwner)
	case r.Readers > 0:
		fmt.Fprintf(&b, "  rwlock  read-held  readers %d (owners %d)  longest ttl %s\n", r.Readers, r.ReaderOwners, ttl(r.ReadTTL))
	default:
		fmt.Fprintf(&b, "  rwlock  free\n")
	}
	if r.WaitingWriters > 0 {
		fmt.Fprintf(&b, "          waiting writers %d (new readers are refused)\n", r.WaitingWriters)
	}
	if r.LastWriteFence > 0 {
		fmt.Fprintf(&b, "          last write fence %d\n", r.LastWriteFence)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeTable prints states as a table, one lock a row.
func writeTable(w io.Writer, ss []locker.LockState) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tMUTEX\tFENCE\tTTL\tHOLDS\tOWNER\tQUEUE\tHEAD\tREADERS\tWRITER\tW-FENCE\tW-TTL\tW-WAITING")
	for _, s := range ss {
		m, r := s.Mutex, s.RW
		mutex, fence, mttl, holds := "free", "-", "-", "-"
		if m.Held {
			mutex, fence, mttl, holds = "held", strconv.FormatInt(m.Fence, 10), ttl(m.TTL), strconv.Itoa(m.Holds)
		}
		writer, wfence, wttl := "-", "-", "-"
		if r.Writer {
			writer, wfence, wttl = r.WriterOwner, strconv.FormatInt(r.WriterFence, 10), ttl(r.WriterTTL)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%d\n",
			display(s.Name), mutex, fence, mttl, holds, dash(m.Owner), m.Queue, dash(m.QueueHead),
			r.Readers, writer, wfence, wttl, r.WaitingWriters)
	}
	return tw.Flush()
}
