package locker

import "strings"

// MaxNameLen is the longest lock name or claim key accepted, in bytes.
const MaxNameLen = 4096

// nameEscaper makes a name safe inside a hash tag: '{' and '}' would end or
// empty the tag and split one lock's keys across slots. Escaping '%' as
// well keeps the mapping one-to-one, so two names never share a key.
var nameEscaper = strings.NewReplacer("%", "%25", "{", "%7B", "}", "%7D")

// tag returns the hash-tagged base key "<prefix>{<escaped name>}". Every key
// of one lock starts with it, so all of them hash to the same slot.
func tag(prefix, name string) string {
	return prefix + "{" + nameEscaper.Replace(name) + "}"
}

// Key returns the Redis key of the lock named name under this client's
// prefix: "<prefix>{<name>}", with '%', '{' and '}' in name escaped as %25,
// %7B and %7D. The lock's other keys ("<key>:rw", "<key>:q", ...) share
// its hash slot. Key does not validate name.
func (c *Client) Key(name string) string {
	return tag(c.prefix, name)
}

// claimKey returns the key of the claim marker for key.
func (c *Client) claimKey(key string) string {
	return tag(c.prefix, key) + ":claim"
}
