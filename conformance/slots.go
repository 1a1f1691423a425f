package conformance

import "strconv"

// sameSlotNames returns bases[0] and, for each other base, the first name
// base+"0", base+"1", ... whose slot is that of bases[0]. The names must be
// left unchanged by the core's key escaping (no '%', '{' or '}').
func sameSlotNames(bases ...string) []string {
	want := keySlot(bases[0])
	out := []string{bases[0]}
	for _, b := range bases[1:] {
		for i := 0; ; i++ {
			if n := b + strconv.Itoa(i); keySlot(n) == want {
				out = append(out, n)
				break
			}
		}
	}
	return out
}

// keySlot is the Redis Cluster hash slot of a hash tag's content:
// CRC16-CCITT (XMODEM) modulo 16384. The core computes slots too (to group
// a MultiLock's names); this second implementation is deliberate: the
// suite checks the core's grouping against its own, independent reckoning
// (and the server's), so a bug shared by both cannot hide. It divides by
// the polynomial one message bit at a time, where the core shifts in a
// byte at a time.
func keySlot(tag string) uint16 {
	var crc uint16
	for _, b := range []byte(tag) {
		for bit := 7; bit >= 0; bit-- {
			feedback := crc>>15 ^ uint16(b>>bit)&1
			crc <<= 1
			if feedback == 1 {
				crc ^= 0x1021
			}
		}
	}
	return crc % 16384
}
