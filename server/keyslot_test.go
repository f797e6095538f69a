package server

import (
	"strings"
	"testing"
)

// TestKeySlot checks values published in Redis's documentation and
// Cluster specification.
func TestKeySlot(t *testing.T) {
	cases := map[string]int{
		"foo":           12182,
		"123456789":     0x31C3, // the spec's check value of CRC16 XMODEM
		"somekey":       11058,  // CLUSTER KEYSLOT's documented example
		"foo{hash_tag}": 2515,   // ...and its hash-tag example
		"bar{hash_tag}": 2515,
		"":              0,
	}
	for key, want := range cases {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	// The spec's hash-tag rules: the key, and the part of it hashed.
	hashed := [][2]string{
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{bar}{zap}", "bar"},     // only the first tag counts
		{"foo{{bar}}zap", "{bar"},    // from the first '{' to the first '}' after it
		{"foo{}{bar}", "foo{}{bar}"}, // an empty tag: the whole key
		{"{}", "{}"},
		{"foo{bar", "foo{bar"}, // no '}': the whole key
		{"}foo{bar}", "bar"},   // a '}' before the '{' is plain text
	}
	for _, p := range hashed {
		if got, want := KeySlot([]byte(p[0])), int(crc16([]byte(p[1]))%ClusterSlots); got != want {
			t.Errorf("KeySlot(%q) = %d, want the slot of %q (%d)", p[0], got, p[1], want)
		}
	}
	if KeySlot([]byte("foo{}{bar}")) == KeySlot([]byte("bar")) {
		t.Error(`"foo{}{bar}" hashed its second tag`)
	}
	if KeySlot([]byte("{}")) == KeySlot(nil) {
		t.Error(`"{}" hashed as the empty tag`)
	}
}

// refKeySlot is KeySlot written the plainest way, for the fuzz target:
// a bit-at-a-time CRC and the tag found with strings.Index.
func refKeySlot(key string) int {
	if open := strings.Index(key, "{"); open >= 0 {
		if n := strings.Index(key[open+1:], "}"); n > 0 {
			key = key[open+1 : open+1+n]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % ClusterSlots)
}

func FuzzKeySlot(f *testing.F) {
	for _, s := range []string{"foo", "{user1000}.following", "foo{}{bar}", "{}", "{", "}{", "a{b}c", "\xff\x00{\x80}"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, key []byte) {
		got, want := KeySlot(key), refKeySlot(string(key))
		if got != want {
			t.Fatalf("KeySlot(%q) = %d, reference %d", key, got, want)
		}
		if s := keySlot(string(key)); s != got { // the keyspace's path, for string keys
			t.Fatalf("keySlot(string %q) = %d, KeySlot = %d", key, s, got)
		}
		if got < 0 || got >= ClusterSlots {
			t.Fatalf("KeySlot(%q) = %d: out of range", key, got)
		}
	})
}
