package server

// KeySlot is key's Redis Cluster hash slot: CRC16 (XMODEM) of the key, or
// of its {hash tag} when it has a non-empty one, mod 16384.
func KeySlot(key []byte) int {
	for i, b := range key {
		if b == '{' {
			for j := i + 1; j < len(key); j++ {
				if key[j] == '}' {
					if j > i+1 {
						key = key[i+1 : j]
					}
					return int(crc16(key) & 16383)
				}
			}
			break
		}
	}
	return int(crc16(key) & 16383)
}

func crc16(p []byte) uint16 {
	var crc uint16
	for _, b := range p {
		crc ^= uint16(b) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
