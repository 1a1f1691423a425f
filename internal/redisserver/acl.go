package redisserver

import "context"

// CreateACLUser creates or replaces the ACL user user with the password
// password and only the given rules (ACL SETUSER user reset on >password
// resetkeys resetchannels -@all rules...): the user starts with no commands,
// no keys and no channels, and rules grant them, for example "~lock:*",
// "&lock:*", "+@scripting", "+ping". A started server also saves its users
// to its ACL file (ACL SAVE), so they survive [Server.Restart] and
// [Server.Kill]; on an external server the user lives in memory only (no
// ACL SAVE: the server's own ACL file is left as it was) until
// [Server.DeleteACLUser] or a restart.
//
// It blocks until the server has replied or ctx is done. A rule Redis
// rejects comes back as the server's *[RedisError], and the user is left as
// it was.
func (s *Server) CreateACLUser(ctx context.Context, user, password string, rules ...string) error {
	args := append([]string{"ACL", "SETUSER", user, "reset", "on", ">" + password, "resetkeys", "resetchannels", "-@all"}, rules...)
	if _, err := s.Do(ctx, args...); err != nil {
		return err
	}
	return s.saveACL(ctx)
}

// DeleteACLUser deletes the ACL user user (ACL DELUSER), closing its
// connections; deleting a user that does not exist is not an error. A
// started server also saves its users to its ACL file (ACL SAVE); an
// external server's ACL file is left as it was. It blocks until the server
// has replied or ctx is done, and returns the server's *[RedisError] when
// it refuses.
func (s *Server) DeleteACLUser(ctx context.Context, user string) error {
	if _, err := s.Do(ctx, "ACL", "DELUSER", user); err != nil {
		return err
	}
	return s.saveACL(ctx)
}

// saveACL saves a started server's users to its ACL file (ACL SAVE); it
// does nothing on an external server.
func (s *Server) saveACL(ctx context.Context) error {
	if s.external {
		return nil
	}
	_, err := s.Do(ctx, "ACL", "SAVE")
	return err
}

// DoAs is [Server.Do] as the ACL user user: the fresh connection first
// authenticates (AUTH user password), then sends the command. It blocks
// until the reply arrives or ctx is done. A refused login (WRONGPASS) or a
// command the user may not run (NOPERM) comes back as the server's
// *[RedisError], unwrapped.
func (s *Server) DoAs(ctx context.Context, user, password string, args ...string) (any, error) {
	return s.doAs(ctx, []string{user, password}, args)
}

// CreateACLUser runs [Server.CreateACLUser] on every node, masters and
// replicas, since Redis does not share ACL users between nodes. It blocks
// until every node has replied or ctx is done, and returns every node's
// error joined; a node that failed is left without the user.
func (c *Cluster) CreateACLUser(ctx context.Context, user, password string, rules ...string) error {
	return each(c.servers(), func(s *Server) error { return s.CreateACLUser(ctx, user, password, rules...) })
}

// DeleteACLUser runs [Server.DeleteACLUser] on every node, masters and
// replicas. It blocks until every node has replied or ctx is done, and
// returns every node's error joined.
func (c *Cluster) DeleteACLUser(ctx context.Context, user string) error {
	return each(c.servers(), func(s *Server) error { return s.DeleteACLUser(ctx, user) })
}
