// Command scriptlock shows and manages the locks of
// github.com/scriptlock/scriptlock on a running Redis, standalone or
// Cluster, through the go-redis driver:
//
//	scriptlock [flags] inspect [flags] NAME...  the state of named locks
//	scriptlock [flags] list    [flags]          every lock under the prefix (SCAN)
//	scriptlock [flags] watch   [flags] NAME     redraw a lock's state as it changes
//	scriptlock [flags] release --force --yes-really [flags] NAME
//	                                            end the current holders' leases
//	scriptlock [flags] leader  [--watch] NAME   an election's leader; --watch
//	                                            follows it
//
// Flags, before or after the command (and among the names); a flag given
// twice takes its later value. The command's own flags (release --force,
// watch --interval, ...) come after the command:
//
//	--url URL          redis:// or rediss:// URL (default $SCRIPTLOCK_URL, else
//	                   redis://localhost:6379); with --cluster it supplies the
//	                   user, password and TLS settings
//	--cluster ADDRS    Cluster seed nodes, host:port,host:port,...
//	--prefix PREFIX    the Clients' key prefix (default "scriptlock:")
//	--json             print JSON instead of text
//	--timeout D        bound on each Redis call (default 5s)
//
// A name's mutex, read-write lock and semaphore are shown together; list's
// SAME-OWNER column names the other locks whose mutex has the same owner
// (the parts of one MultiLock share it). Owner tokens are never shown:
// owners and waiters appear as their fingerprint (locker.Fingerprint),
// which a holder can log to be recognised.
//
// Exit status: 0 done, 1 an operational error (Redis unreachable, refused
// a command, ...), 2 a usage error (bad flags or arguments, a release
// without its confirmation flags).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/scriptlock/scriptlock/drivers/goredis"
	"github.com/scriptlock/scriptlock/locker"
)

// Exit codes.
const (
	exitOK    = 0
	exitFail  = 1
	exitUsage = 2
)

func main() {
	redis.SetLogger(quiet{}) // errors reach the user through run, with a hint
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// quiet drops go-redis's log lines (dial retries, ...).
type quiet struct{}

func (quiet) Printf(context.Context, string, ...any) {}

const usage = `usage: scriptlock [flags] <command> [flags] [NAME...]

commands:
  inspect NAME...   show the state of the named locks (mutex, read-write lock, semaphore)
  list              find every lock under the prefix (SCAN, never KEYS) and show its state
  watch NAME        redraw the lock's state whenever it changes, until interrupted
  release --force --yes-really NAME
                    end the current holders' leases of NAME (an operator's escape hatch)
  leader [--watch] NAME
                    show the leader of election NAME; --watch prints every new leader

flags (before or after the command; given twice, the later wins):
  --url URL         redis:// or rediss:// URL (default $SCRIPTLOCK_URL, else redis://localhost:6379)
  --cluster ADDRS   Redis Cluster seed nodes, host:port,host:port,...
  --prefix PREFIX   key prefix of the lock Clients (default "scriptlock:")
  --json            print JSON
  --timeout D       bound on each Redis call (default 5s)

Run 'scriptlock <command> -h' for the command's own flags.
`

// run is the whole command: it parses args, runs one subcommand and
// returns the exit status. It returns when the subcommand is done or, for
// watch, when ctx ends.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	args, err := commandFirst(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(stdout, usage)
		return exitOK
	case err != nil:
		fmt.Fprintf(stderr, "scriptlock: %v\n\n%s", err, usage)
		return exitUsage
	}
	cmd, rest := args[0], args[1:]
	var f func(context.Context, []string, io.Writer, io.Writer) int
	switch cmd {
	case "inspect":
		f = cmdInspect
	case "list":
		f = cmdList
	case "watch":
		f = cmdWatch
	case "release":
		f = cmdRelease
	case "leader":
		f = cmdLeader
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return exitOK
	default:
		fmt.Fprintf(stderr, "scriptlock: unknown command %q\n\n%s", cmd, usage)
		return exitUsage
	}
	return f(ctx, rest, stdout, stderr)
}

// errNoCommand is commandFirst's error for flags without a command.
var errNoCommand = errors.New("give a command after the flags: inspect, list, watch, release or leader")

// commandFirst moves the shared flags given before the command to just
// after it ("--url U list --json" becomes "list --url U --json"), where the
// command's own parsing reads them as if they had been written there. It
// returns args unchanged when they start with the command (or with -h),
// flag.ErrHelp for -h among the leading flags, and an error naming the
// problem for a leading flag that is not shared or lacks its value, or
// for flags without a command.
func commandFirst(args []string) ([]string, error) {
	if len(args) == 0 || !strings.HasPrefix(args[0], "-") || args[0] == "-" {
		return args, nil
	}
	switch args[0] {
	case "-h", "-help", "--help":
		return args, nil
	}
	var cfg config
	fs := newFlags("", "", &cfg, io.Discard)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) || !strings.HasPrefix(err.Error(), "flag provided but not defined") {
			return nil, err
		}
		return nil, fmt.Errorf("%v: before the command only the shared flags --url, --cluster, --prefix, --json and --timeout are accepted; give the command's own flags after it", err)
	}
	rest := fs.Args()
	if len(rest) == 0 {
		return nil, errNoCommand
	}
	lead := args[:len(args)-len(rest)]
	if n := len(lead); n > 0 && lead[n-1] == "--" {
		lead = lead[:n-1] // "--" ended the flags; after the command it would end them too early
	}
	return append(append([]string{rest[0]}, lead...), rest[1:]...), nil
}

// config holds the flags every command shares.
type config struct {
	url     string
	cluster string
	prefix  string
	json    bool
	timeout time.Duration
}

// newFlags returns the flag set of command cmd with the shared flags bound
// to cfg.
func newFlags(cmd, synopsis string, cfg *config, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("scriptlock "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := os.Getenv("SCRIPTLOCK_URL")
	if url == "" {
		url = "redis://localhost:6379"
	}
	fs.StringVar(&cfg.url, "url", url, "Redis `URL`: redis://[user:password@]host:port[/db] or rediss://... (default $SCRIPTLOCK_URL)")
	fs.StringVar(&cfg.cluster, "cluster", "", "Redis Cluster seed nodes `host:port,...` (--url then supplies only user, password and TLS)")
	fs.StringVar(&cfg.prefix, "prefix", locker.DefaultPrefix, "key `prefix` of the lock Clients")
	fs.BoolVar(&cfg.json, "json", false, "print JSON")
	fs.DurationVar(&cfg.timeout, "timeout", 5*time.Second, "bound on each Redis call")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: scriptlock %s\n\nflags:\n", synopsis)
		fs.PrintDefaults()
	}
	return fs
}

// parse parses args with fs, letting flags and positional arguments mix
// ("inspect a --json b"); everything after "--" is positional. It returns
// the positional arguments, or flag.ErrHelp or a parse error (printed
// already).
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}

// parseName parses args, which must give exactly one NAME of a kind
// ("lock", "election"). It returns the name, or ok false and the exit
// status of a parse or usage error.
func parseName(fs *flag.FlagSet, args []string, kind string, stderr io.Writer) (name string, status int, ok bool) {
	names, err := parse(fs, args)
	if err != nil {
		return "", parseError(err), false
	}
	if len(names) != 1 || names[0] == "" || len(names[0]) > locker.MaxNameLen {
		return "", usageError(stderr, fs, "give exactly one %s NAME (1 to %d bytes)", kind, locker.MaxNameLen), false
	}
	return names[0], 0, true
}

// usageError prints a usage error and returns exitUsage.
func usageError(stderr io.Writer, fs *flag.FlagSet, format string, a ...any) int {
	fmt.Fprintf(stderr, "%s: %s\n", fs.Name(), fmt.Sprintf(format, a...))
	fmt.Fprintf(stderr, "run '%s -h' for help\n", fs.Name())
	return exitUsage
}

// parseError turns a parse result into an exit status: -h is not an error.
func parseError(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitUsage
}

// conn is a connection to Redis and the lock Client on it.
type conn struct {
	rdb   redis.UniversalClient
	locks *locker.Client
	where string // for messages: the address or the seeds
	cfg   *config
}

func (c *conn) close() {
	_ = c.locks.Close()
	_ = c.rdb.Close()
}

// call returns a context for one Redis call, bounded by --timeout.
func (c *conn) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.timeout)
}

// errUsage marks a connection error that is the user's to fix in the flags.
var errUsage = errors.New("usage")

// connect opens the connection the flags describe and checks that Redis
// answers. An error wrapping errUsage is a usage error.
func connect(ctx context.Context, cfg *config) (*conn, error) {
	if cfg.timeout <= 0 {
		return nil, fmt.Errorf("%w: --timeout must be positive, got %v", errUsage, cfg.timeout)
	}
	if cfg.prefix == "" {
		cfg.prefix = locker.DefaultPrefix // as locker.New does
	}
	var rdb redis.UniversalClient
	var where string
	if cfg.cluster != "" {
		var addrs []string
		for _, a := range strings.Split(cfg.cluster, ",") {
			if a = strings.TrimSpace(a); a != "" {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) == 0 {
			return nil, fmt.Errorf("%w: --cluster: give seed nodes as host:port,host:port", errUsage)
		}
		o := &redis.ClusterOptions{Addrs: addrs, ContextTimeoutEnabled: true}
		if cfg.url != "" {
			u, err := redis.ParseURL(cfg.url)
			if err != nil {
				return nil, fmt.Errorf("%w: --url %q: %v; use redis://[user:password@]host:port, or rediss:// for TLS", errUsage, redact(cfg.url), err)
			}
			o.Username, o.Password, o.TLSConfig = u.Username, u.Password, u.TLSConfig
		}
		rdb, where = redis.NewClusterClient(o), "Cluster "+strings.Join(addrs, ",")
	} else {
		o, err := redis.ParseURL(cfg.url)
		if err != nil {
			return nil, fmt.Errorf("%w: --url %q: %v; use redis://[user:password@]host:port[/db], or rediss:// for TLS", errUsage, redact(cfg.url), err)
		}
		o.ContextTimeoutEnabled = true
		rdb, where = redis.NewClient(o), o.Addr
	}
	locks, err := locker.New(goredis.New(rdb), &locker.Options{Prefix: cfg.prefix})
	if err != nil {
		_ = rdb.Close()
		return nil, fmt.Errorf("%w: --prefix %q: %v", errUsage, cfg.prefix, err)
	}
	c := &conn{rdb: rdb, locks: locks, where: where, cfg: cfg}
	cctx, cancel := c.call(ctx)
	defer cancel()
	if err := rdb.Ping(cctx).Err(); err != nil {
		c.close()
		return nil, fmt.Errorf("cannot reach Redis at %s: %w", where, err)
	}
	if cfg.cluster == "" {
		// A Cluster node reached as a single server answers only for its
		// own slots: say how to connect instead.
		if info, err := rdb.Info(cctx, "cluster").Result(); err == nil && strings.Contains(info, "cluster_enabled:1") {
			c.close()
			return nil, fmt.Errorf("%w: %s is a Redis Cluster node: connect with --cluster %s (and any other seed nodes)", errUsage, where, where)
		}
	}
	return c, nil
}

// redact hides the password of a URL in messages.
func redact(u string) string {
	scheme, rest, ok := strings.Cut(u, "://")
	if !ok {
		return u
	}
	cred, host, ok := strings.Cut(rest, "@")
	if !ok {
		return u
	}
	if user, _, ok := strings.Cut(cred, ":"); ok {
		return scheme + "://" + user + ":xxxxx@" + host
	}
	return u
}

// open connects as connect does and reports a failure on stderr; it
// returns nil and the exit status when it failed.
func open(ctx context.Context, cfg *config, stderr io.Writer) (*conn, int) {
	c, err := connect(ctx, cfg)
	if err == nil {
		return c, exitOK
	}
	if errors.Is(err, errUsage) {
		fmt.Fprintf(stderr, "scriptlock: %s\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return nil, exitUsage
	}
	return nil, fail(stderr, err, "connect")
}

// fail reports an operational error with a hint on what to do, and returns
// exitFail.
func fail(stderr io.Writer, err error, what string) int {
	fmt.Fprintf(stderr, "scriptlock: %s: %v\n", what, err)
	if h := hint(err); h != "" {
		fmt.Fprintf(stderr, "  %s\n", h)
	}
	return exitFail
}

// hint says what to do about err, or "".
func hint(err error) string {
	msg := err.Error()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "Redis did not answer in time: check the address, the network and the server's load, or raise --timeout"
	case errors.Is(err, locker.ErrInvalidName):
		return "lock names are 1 to 4096 bytes"
	case strings.Contains(msg, "NOPERM"):
		return "the Redis user lacks a permission: grant the commands and the ~PREFIX* key pattern listed under \"Redis ACL\" in docs/guarantees.md (list also needs SCAN, and INFO on connect)"
	case strings.Contains(msg, "NOAUTH"), strings.Contains(msg, "WRONGPASS"):
		return "log in with the user and password in the URL: --url redis://user:password@host:port"
	case strings.Contains(msg, "MOVED"), strings.Contains(msg, "CROSSSLOT"):
		return "this is a Redis Cluster: connect with --cluster host:port,..."
	case strings.Contains(msg, "connection refused"), strings.Contains(msg, "no such host"), strings.Contains(msg, "i/o timeout"):
		return "is Redis running there? check --url (or --cluster) and the network"
	case strings.Contains(msg, "tls:"), strings.Contains(msg, "x509"):
		return "a TLS problem: use rediss:// only for a TLS port, and check the server's certificate"
	}
	return ""
}
