package persistence

import "encoding/binary"

// crcPoly is the Jones CRC-64 polynomial (0xad93d23594c935a9) with its bits
// reversed, the form a least-significant-bit-first CRC shifts by. Redis
// checksums RDB files with this CRC: reflected input and output, initial
// value 0, no final XOR. CRC64 of "123456789" is 0xe9c6d914c4b8d9ca.
const crcPoly = 0x95ac9329ac4bc9b5

// crcTables holds eight 256-entry tables for slicing-by-8: table k maps a
// byte to its contribution after k further zero bytes have been shifted
// through, so eight input bytes are folded in with eight lookups.
var crcTables = makeCRCTables()

func makeCRCTables() *[8][256]uint64 {
	t := new([8][256]uint64)
	for b := range 256 {
		c := uint64(b)
		for range 8 {
			if c&1 != 0 {
				c = c>>1 ^ crcPoly
			} else {
				c >>= 1
			}
		}
		t[0][b] = c
	}
	for b := range 256 {
		c := t[0][b]
		for k := 1; k < 8; k++ {
			c = t[0][c&0xff] ^ c>>8
			t[k][b] = c
		}
	}
	return t
}

// CRC64 returns the Redis CRC-64 (Jones polynomial) of p.
func CRC64(p []byte) uint64 { return UpdateCRC64(0, p) }

// UpdateCRC64 continues the checksum crc over p, so that
// UpdateCRC64(CRC64(a), b) == CRC64(append(a, b...)).
func UpdateCRC64(crc uint64, p []byte) uint64 {
	t := crcTables
	for len(p) >= 8 {
		c := crc ^ binary.LittleEndian.Uint64(p)
		crc = t[7][c&0xff] ^ t[6][c>>8&0xff] ^ t[5][c>>16&0xff] ^ t[4][c>>24&0xff] ^
			t[3][c>>32&0xff] ^ t[2][c>>40&0xff] ^ t[1][c>>48&0xff] ^ t[0][c>>56]
		p = p[8:]
	}
	for _, b := range p {
		crc = t[0][byte(crc)^b] ^ crc>>8
	}
	return crc
}
