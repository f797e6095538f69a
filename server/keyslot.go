package server

// ClusterSlots is how many hash slots Redis Cluster divides keys into.
const ClusterSlots = 16384

// KeySlot is the hash slot of key, as Redis Cluster computes it: CRC16
// (XMODEM) of the key modulo 16384. When the key holds a hash tag — a
// non-empty run between its first '{' and the first '}' after that —
// only the tag is hashed, so "{user1}.a" and "{user1}.b" share a slot.
func KeySlot(key []byte) int { return keySlot(key) }

// keySlot is KeySlot for a key held as either a string or bytes, so the
// keyspace (string keys) computes slots without copying the key.
func keySlot[K string | []byte](key K) int {
	return int(crc16(hashTag(key)) & (ClusterSlots - 1))
}

// hashTag returns the part of key that KeySlot hashes.
func hashTag[K string | []byte](key K) K {
	open := indexByte(key, '{')
	if open < 0 {
		return key
	}
	n := indexByte(key[open+1:], '}')
	if n <= 0 { // no '}', or "{}": the whole key
		return key
	}
	return key[open+1 : open+1+n]
}

func indexByte[K string | []byte](s K, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// crc16Table is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0,
// no reflection), one entry per byte value.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

func crc16[K string | []byte](b K) uint16 {
	var crc uint16
	for i := 0; i < len(b); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^b[i]]
	}
	return crc
}
