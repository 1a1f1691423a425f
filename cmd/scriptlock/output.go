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
	Semaphore  semJSON   `json:"semaphore"`
	// Election is the name's election leader, when one has proclaimed.
	Election *electionJSON `json:"election,omitempty"`
}

type electionJSON struct {
	Term   int64     `json:"term"`
	Leader string    `json:"leader"`
	Since  time.Time `json:"since"`
}

type mutexJSON struct {
	Held      bool   `json:"held"`
	Fence     int64  `json:"fence"`
	TTLMS     int64  `json:"ttl_ms"`
	Holds     int    `json:"holds"`
	Owner     string `json:"owner"`
	Queue     int    `json:"queue"`
	QueueHead string `json:"queue_head"`
	// Starving counts the default-mode waiters past their starvation
	// threshold, StarvingHead the one the next release hands the lock to.
	Starving     int    `json:"starving"`
	StarvingHead string `json:"starving_head"`
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

type semJSON struct {
	Limit       int          `json:"limit"`
	LimitSet    bool         `json:"limit_set"`
	Held        int          `json:"held"`
	Holds       int          `json:"holds"`
	Holders     []holderJSON `json:"holders"`
	Waiting     int          `json:"waiting"`
	WaitingHead string       `json:"waiting_head"`
}

type holderJSON struct {
	Owner   string `json:"owner"`
	Permits int    `json:"permits"`
	TTLMS   int64  `json:"ttl_ms"`
	Fence   int64  `json:"fence"`
}

func toJSON(s locker.LockState) stateJSON {
	sem := s.Semaphore
	holders := make([]holderJSON, 0, len(sem.Holders))
	for _, h := range sem.Holders {
		holders = append(holders, holderJSON{Owner: h.Owner, Permits: h.Permits, TTLMS: h.TTL.Milliseconds(), Fence: h.Fence})
	}
	var el *electionJSON
	if s.Election.Term != 0 {
		el = &electionJSON{Term: s.Election.Term, Leader: s.Election.Leader, Since: s.Election.Since.UTC()}
	}
	return stateJSON{
		Name: s.Name, ServerTime: s.ServerTime.UTC(), Free: s.Free(), Election: el,
		Mutex: mutexJSON{
			Held: s.Mutex.Held, Fence: s.Mutex.Fence, TTLMS: s.Mutex.TTL.Milliseconds(), Holds: s.Mutex.Holds,
			Owner: s.Mutex.Owner, Queue: s.Mutex.Queue, QueueHead: s.Mutex.QueueHead,
			Starving: s.Mutex.Starving, StarvingHead: s.Mutex.StarvingHead,
		},
		RW: rwJSON{
			Readers: s.RW.Readers, ReaderOwners: s.RW.ReaderOwners, ReadTTLMS: s.RW.ReadTTL.Milliseconds(),
			Writer: s.RW.Writer, WriterHolds: s.RW.WriterHolds, WriterFence: s.RW.WriterFence,
			WriterTTLMS: s.RW.WriterTTL.Milliseconds(), WriterOwner: s.RW.WriterOwner,
			WaitingWriters: s.RW.WaitingWriters, LastWriteFence: s.RW.LastWriteFence,
		},
		Semaphore: semJSON{
			Limit: sem.Limit, LimitSet: sem.LimitSet, Held: sem.Held, Holds: sem.Holds, Holders: holders,
			Waiting: sem.Waiting, WaitingHead: sem.WaitingHead,
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
	if m.Starving > 0 {
		fmt.Fprintf(&b, "  starving %d waiting past their threshold  next %s\n", m.Starving, m.StarvingHead)
	}
	if e := s.Election; e.Term != 0 {
		fmt.Fprintf(&b, "  leader  %q  term %d  since %s\n", e.Leader, e.Term, e.Since.UTC().Format(time.RFC3339Nano))
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
	writeSemaphore(&b, s.Semaphore)
	_, err := io.WriteString(w, b.String())
	return err
}

// writeSemaphore adds a semaphore's lines to an inspect block: its limit
// and permits held, each holder, and its waiters; nothing when the name
// has no semaphore state.
func writeSemaphore(b *strings.Builder, sem locker.SemaphoreState) {
	if sem.Limit == 0 && sem.Holds == 0 && sem.Waiting == 0 {
		return
	}
	set := ""
	if sem.LimitSet {
		set = " (SetPermits)"
	}
	fmt.Fprintf(b, "  sem     %d of %d permits held%s  holds %d  waiting %d", sem.Held, sem.Limit, set, sem.Holds, sem.Waiting)
	if sem.Waiting > 0 {
		fmt.Fprintf(b, "  head %s", sem.WaitingHead)
	}
	b.WriteString("\n")
	for _, h := range sem.Holders {
		fmt.Fprintf(b, "          holder %s  permits %d  fence %d  ttl %s\n", h.Owner, h.Permits, h.Fence, ttl(h.TTL))
	}
	if more := sem.Holds - len(sem.Holders); more > 0 {
		fmt.Fprintf(b, "          ... and %d more holder(s)\n", more)
	}
}

// semCell prints a semaphore's table cell: permits held of the limit,
// "-" when the name has none.
func semCell(sem locker.SemaphoreState) string {
	if sem.Limit == 0 && sem.Holds == 0 && sem.Waiting == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", sem.Held, sem.Limit)
}

// partsCell prints the other names of a table whose mutex has the same
// owner (a MultiLock's parts share their owner token, and so its
// Fingerprint), "-" when none.
func partsCell(s locker.LockState, byOwner map[string][]string) string {
	if !s.Mutex.Held {
		return "-"
	}
	var others []string
	for _, n := range byOwner[s.Mutex.Owner] {
		if n != s.Name {
			others = append(others, display(n))
		}
	}
	if len(others) == 0 {
		return "-"
	}
	if len(others) > 3 {
		others = append(others[:3], fmt.Sprintf("+%d", len(others)-3))
	}
	return strings.Join(others, ",")
}

// writeTable prints states as a table, one lock a row.
func writeTable(w io.Writer, ss []locker.LockState) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	byOwner := map[string][]string{}
	for _, s := range ss {
		if s.Mutex.Held {
			byOwner[s.Mutex.Owner] = append(byOwner[s.Mutex.Owner], s.Name)
		}
	}
	fmt.Fprintln(tw, "NAME\tMUTEX\tFENCE\tTTL\tHOLDS\tOWNER\tSAME-OWNER\tQUEUE\tHEAD\tREADERS\tWRITER\tW-FENCE\tW-TTL\tW-WAITING\tSEM\tS-HOLDS\tS-WAITING")
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
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%d\t%s\t%s\t%s\t%d\t%s\t%d\t%d\n",
			display(s.Name), mutex, fence, mttl, holds, dash(m.Owner), partsCell(s, byOwner), m.Queue, dash(m.QueueHead),
			r.Readers, writer, wfence, wttl, r.WaitingWriters, semCell(s.Semaphore), s.Semaphore.Holds, s.Semaphore.Waiting)
	}
	return tw.Flush()
}
