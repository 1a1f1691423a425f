package redisserver

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Environment variables that point tests at an existing deployment the way
// an application connects to it: by URL, with a user, a password, a
// database and TLS.
const (
	// EnvRedisURL holds the URL of a standalone server,
	// redis://[user:password@]host:port[/db] or rediss://... (TLS), that
	// StartStandalone returns instead of starting one. It wins over
	// [EnvRedisAddr].
	EnvRedisURL = "SCRIPTLOCK_REDIS_URL"
	// EnvClusterURLs holds comma-separated URLs of masters of a Redis
	// Cluster (each as in [EnvRedisURL], no database) that StartCluster
	// returns instead of starting one. It wins over [EnvClusterAddrs].
	EnvClusterURLs = "SCRIPTLOCK_CLUSTER_URLS"
	// EnvTLSCA holds the path of a PEM file of the certificate authorities
	// a rediss:// URL's server certificate is checked against; unset, the
	// system's roots are used.
	EnvTLSCA = "SCRIPTLOCK_TLS_CA"
)

// Dial holds how a client connects to a server beyond its address: what a
// redis:// or rediss:// URL says. Its zero value is a plain connection as
// the default user to database 0.
type Dial struct {
	// Username and Password log in (AUTH [user] password) when Password is
	// set; Username "" means the default user.
	Username, Password string
	// DB is the database to SELECT (standalone only); 0 by default.
	DB int
	// TLS, when set, is the TLS configuration of the connection (its
	// ServerName is set per address); nil means plain TCP.
	TLS *tls.Config
}

// ParseURL parses a redis:// or rediss:// URL into its host:port address
// and Dial settings. For rediss:// the server certificate is checked
// against the PEM file caFile when it is not "", else the system's roots.
// It fails on another scheme, a missing host, a bad port or database, or
// an unreadable CA file.
func ParseURL(raw, caFile string) (addr string, d Dial, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", Dial{}, fmt.Errorf("redisserver: URL %q: %w", redact(raw), err)
	}
	switch u.Scheme {
	case "redis":
	case "rediss":
		d.TLS = &tls.Config{MinVersion: tls.VersionTLS12}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return "", Dial{}, fmt.Errorf("redisserver: %s: %w", EnvTLSCA, err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return "", Dial{}, fmt.Errorf("redisserver: %s=%s holds no PEM certificate", EnvTLSCA, caFile)
			}
			d.TLS.RootCAs = pool
		}
	default:
		return "", Dial{}, fmt.Errorf("redisserver: URL %q: scheme %q, want redis:// or rediss://", redact(raw), u.Scheme)
	}
	if u.Hostname() == "" {
		return "", Dial{}, fmt.Errorf("redisserver: URL %q has no host", redact(raw))
	}
	port := u.Port()
	if port == "" {
		port = "6379"
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return "", Dial{}, fmt.Errorf("redisserver: URL %q: bad port %q", redact(raw), port)
	}
	addr = net.JoinHostPort(u.Hostname(), port)
	if u.User != nil {
		if pw, ok := u.User.Password(); ok {
			d.Username, d.Password = u.User.Username(), pw
		} else {
			d.Password = u.User.Username() // redis://:pw@ or redis://pw@: a password only
		}
	}
	if p := strings.Trim(u.Path, "/"); p != "" {
		if d.DB, err = strconv.Atoi(p); err != nil || d.DB < 0 {
			return "", Dial{}, fmt.Errorf("redisserver: URL %q: bad database %q", redact(raw), p)
		}
	}
	return addr, d, nil
}

// redact hides the password of a URL for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			return "<redacted>" + raw[i:]
		}
		return raw
	}
	return u.Redacted()
}

// clusterURLs parses the comma-separated URLs of [EnvClusterURLs]: the
// addresses, and the Dial settings, which must be the same for all.
func clusterURLs(env string) (addrs []string, d Dial, err error) {
	var first bool
	for _, raw := range strings.Split(env, ",") {
		if raw = strings.TrimSpace(raw); raw == "" {
			continue
		}
		a, di, err := ParseURL(raw, os.Getenv(EnvTLSCA))
		if err != nil {
			return nil, Dial{}, err
		}
		if di.DB != 0 {
			return nil, Dial{}, fmt.Errorf("redisserver: %s: %q names database %d; a Cluster has only database 0", EnvClusterURLs, redact(raw), di.DB)
		}
		if !first {
			d, first = di, true
		} else if di.Username != d.Username || di.Password != d.Password || (di.TLS == nil) != (d.TLS == nil) {
			return nil, Dial{}, fmt.Errorf("redisserver: %s: every URL must have the same user, password and scheme", EnvClusterURLs)
		}
		addrs = append(addrs, a)
	}
	if len(addrs) == 0 {
		return nil, Dial{}, errors.New("redisserver: " + EnvClusterURLs + " holds no URL")
	}
	return addrs, d, nil
}

// externalStandalone returns the external server that [EnvRedisURL] or
// [EnvRedisAddr] names, or nil when neither is set.
func externalStandalone() (*Server, string, error) {
	if raw := os.Getenv(EnvRedisURL); raw != "" {
		addr, d, err := ParseURL(raw, os.Getenv(EnvTLSCA))
		if err != nil {
			return nil, EnvRedisURL, err
		}
		return &Server{Addr: addr, external: true, dialer: d}, EnvRedisURL, nil
	}
	if addr := os.Getenv(EnvRedisAddr); addr != "" {
		return &Server{Addr: addr, external: true}, EnvRedisAddr, nil
	}
	return nil, "", nil
}

// Open returns an external Server for the server at the redis:// or
// rediss:// URL raw (see ParseURL; caFile as there), as StartStandalone
// does for [EnvRedisURL], once it answers PING (within 5s). That server is
// never started, stopped or restarted by this package.
func Open(raw, caFile string) (*Server, error) {
	addr, d, err := ParseURL(raw, caFile)
	if err != nil {
		return nil, err
	}
	s := &Server{Addr: addr, external: true, dialer: d}
	if err := pingExternal(s, "URL "+redact(raw)); err != nil {
		return nil, err
	}
	return s, nil
}

// Dial returns how s's connections log in and encrypt: the settings of
// the URL that named it ([EnvRedisURL], [EnvClusterURLs]), or the zero
// Dial.
func (s *Server) Dial() Dial { return s.dialer }

// ExternalEnv returns the names of the variables that point tests at an
// existing deployment and are set, such as "SCRIPTLOCK_REDIS_URL"; none
// means every deployment is started by the tests.
func ExternalEnv() []string {
	var set []string
	for _, e := range []string{EnvRedisURL, EnvRedisAddr, EnvClusterURLs, EnvClusterAddrs} {
		if os.Getenv(e) != "" {
			set = append(set, e)
		}
	}
	return set
}

// As returns the external server s with its connections logging in as
// user with password instead (TLS and database unchanged). It panics on a
// server this package started.
func (s *Server) As(user, password string) *Server {
	if !s.external {
		panic("redisserver: As on a server this package started")
	}
	d := s.dialer
	d.Username, d.Password = user, password
	return &Server{Addr: s.Addr, external: true, dialer: d}
}

// As returns the external Cluster c with its nodes' connections logging in
// as user with password instead (see Server.As). It panics on a Cluster
// this package started.
func (c *Cluster) As(user, password string) *Cluster {
	if !c.external {
		panic("redisserver: As on a Cluster this package started")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := &Cluster{Addrs: c.Addrs, external: true}
	for _, n := range c.Nodes {
		out.Nodes = append(out.Nodes, n.As(user, password))
	}
	for _, r := range c.Replicas {
		out.Replicas = append(out.Replicas, r.As(user, password))
	}
	return out
}
