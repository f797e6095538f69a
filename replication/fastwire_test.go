package replication

import (
	"bufio"
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/hashicorp/go-msgpack/v2/codec"
	"github.com/hashicorp/raft"
)

// The fork encodes AppendEntries by hand (third_party/raft/fastwire.go,
// REDSTREAM.md change 6). These tests hold it to the reflection codec
// NetworkTransport used before, both ways, so that nodes of either
// build replicate to each other.

func codecHandle(newTime, writeExt bool) *codec.MsgpackHandle {
	h := &codec.MsgpackHandle{}
	h.TimeNotBuiltin = !newTime
	h.WriteExt = writeExt
	return h
}

func codecBytes(t testing.TB, h *codec.MsgpackHandle, vs ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := codec.NewEncoder(&buf, h)
	for _, v := range vs {
		if err := enc.Encode(v); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// randomBytes is nil, empty, or of a length that crosses the fixstr,
// str16 and (when big) str32 boundaries.
func randomBytes(r *rand.Rand, big bool) []byte {
	switch r.IntN(6) {
	case 0:
		return nil
	case 1:
		return []byte{}
	}
	lens := []int{r.IntN(32), 31 + r.IntN(3), 255 + r.IntN(3), 65535 + r.IntN(3)}
	if !big {
		lens = lens[:2]
	}
	n := lens[r.IntN(len(lens))]
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// randomUint crosses every integer width's boundary.
func randomUint(r *rand.Rand) uint64 {
	edges := []uint64{0, 1, 127, 128, 255, 256, 65535, 65536, 1<<32 - 1, 1 << 32, 1<<63 - 1, 1 << 63, 1<<64 - 1}
	if r.IntN(2) == 0 {
		return edges[r.IntN(len(edges))]
	}
	return r.Uint64() >> r.IntN(64)
}

func randomHeader(r *rand.Rand) raft.RPCHeader {
	versions := []int{0, 1, 3, 127, 128, 300, 40000, -1, -33, -200, 1 << 40}
	return raft.RPCHeader{ProtocolVersion: raft.ProtocolVersion(versions[r.IntN(len(versions))]),
		ID: randomBytes(r, false), Addr: randomBytes(r, false)}
}

// randomRequest crosses every length boundary; a small one (for fuzz
// seeds) keeps to a few entries of short data.
func randomRequest(r *rand.Rand, big bool) *raft.AppendEntriesRequest {
	req := &raft.AppendEntriesRequest{RPCHeader: randomHeader(r), Term: randomUint(r), Leader: randomBytes(r, false),
		PrevLogEntry: randomUint(r), PrevLogTerm: randomUint(r), LeaderCommitIndex: randomUint(r)}
	counts := []int{-1, 0, 1, 3, 15, 16, 40}
	if !big {
		counts = counts[:4]
	}
	switch n := counts[r.IntN(len(counts))]; n {
	case -1: // nil: a heartbeat
	default:
		req.Entries = make([]*raft.Log, n)
		for i := range req.Entries {
			req.Entries[i] = &raft.Log{Index: randomUint(r), Term: randomUint(r), Type: raft.LogType(r.IntN(256)),
				Data: randomBytes(r, big), Extensions: randomBytes(r, false)}
			if r.IntN(4) > 0 {
				req.Entries[i].AppendedAt = time.Unix(r.Int64N(1<<34), r.Int64N(1e9))
			}
		}
	}
	return req
}

func randomResponse(r *rand.Rand) *raft.AppendEntriesResponse {
	return &raft.AppendEntriesResponse{RPCHeader: randomHeader(r), Term: randomUint(r), LastLog: randomUint(r),
		Success: r.IntN(2) == 0, NoRetryBackoff: r.IntN(2) == 0}
}

// sameRequest compares what a receiver needs: times by instant (the
// binary form keeps the zone offset, not the *Location), byte slices by
// content with nil kept apart from empty only where the codec keeps it.
func sameRequest(a, b *raft.AppendEntriesRequest) error {
	ea, eb := a.Entries, b.Entries
	ca, cb := *a, *b
	ca.Entries, cb.Entries = nil, nil
	if !reflect.DeepEqual(ca, cb) {
		return fmt.Errorf("request %+v, want %+v", cb, ca)
	}
	if (ea == nil) != (eb == nil) || len(ea) != len(eb) {
		return fmt.Errorf("%d entries (nil %v), want %d (nil %v)", len(eb), eb == nil, len(ea), ea == nil)
	}
	for i := range ea {
		if ea[i] == nil || eb[i] == nil {
			if ea[i] != eb[i] {
				return fmt.Errorf("entry %d is %v, want %v", i, eb[i], ea[i])
			}
			continue
		}
		la, lb := *ea[i], *eb[i]
		if !la.AppendedAt.Equal(lb.AppendedAt) {
			return fmt.Errorf("entry %d appended at %v, want %v", i, lb.AppendedAt, la.AppendedAt)
		}
		la.AppendedAt, lb.AppendedAt = time.Time{}, time.Time{}
		if !reflect.DeepEqual(la, lb) {
			return fmt.Errorf("entry %d: %+v, want %+v", i, lb, la)
		}
	}
	return nil
}

func TestFastWireWritesTheCodecsBytes(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	h := codecHandle(false, false) // NetworkTransport's encoder
	for i := range 400 {
		req := randomRequest(r, true)
		got, ok := raft.AppendAppendEntriesRequestWire(nil, req)
		if !ok {
			t.Fatalf("case %d: the fast encoder gave up on %+v", i, req)
		}
		if want := codecBytes(t, h, req); !bytes.Equal(got, want) {
			t.Fatalf("case %d: request encodes as\n%q\nthe codec writes\n%q", i, got, want)
		}
		resp := randomResponse(r)
		rpcErr := []string{"", "rpc error", string(make([]byte, 40))}[r.IntN(3)]
		got = raft.AppendAppendEntriesResponseWire(nil, rpcErr, resp)
		if want := codecBytes(t, h, rpcErr, resp); !bytes.Equal(got, want) {
			t.Fatalf("case %d: response encodes as\n%q\nthe codec writes\n%q", i, got, want)
		}
	}
}

func TestFastWireReadsEveryCodecForm(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, h := range []*codec.MsgpackHandle{
		codecHandle(false, false), // what NetworkTransport writes
		codecHandle(true, false),  // MsgpackUseNewTimeFormat: the timestamp extension
		codecHandle(true, true),   // bin types for []byte
	} {
		for i := range 300 {
			req := randomRequest(r, true)
			var got raft.AppendEntriesRequest
			if err := raft.ReadAppendEntriesRequestWire(bufio.NewReader(bytes.NewReader(codecBytes(t, h, req))), &got); err != nil {
				t.Fatalf("case %d (new time %v, bin %v): %v", i, !h.TimeNotBuiltin, h.WriteExt, err)
			}
			if h.WriteExt { // the codec itself reads bin back as empty, not nil
				normalizeEmpty(req, &got)
			}
			if err := sameRequest(req, &got); err != nil {
				t.Fatalf("case %d (new time %v, bin %v): %v", i, !h.TimeNotBuiltin, h.WriteExt, err)
			}
			resp := randomResponse(r)
			var gotResp raft.AppendEntriesResponse
			msg, err := raft.ReadAppendEntriesResponseWire(bufio.NewReader(bytes.NewReader(codecBytes(t, h, "no", resp))), &gotResp)
			if err != nil || msg != "no" {
				t.Fatalf("case %d: response error text %q, %v", i, msg, err)
			}
			if h.WriteExt {
				normalizeHeader(&resp.RPCHeader, &gotResp.RPCHeader)
			}
			if !reflect.DeepEqual(*resp, gotResp) {
				t.Fatalf("case %d: response %+v, want %+v", i, gotResp, *resp)
			}
		}
	}
}

func normalizeEmpty(want, got *raft.AppendEntriesRequest) {
	normalizeHeader(&want.RPCHeader, &got.RPCHeader)
	same(&want.Leader, &got.Leader)
	for i := range want.Entries {
		if i < len(got.Entries) {
			same(&want.Entries[i].Data, &got.Entries[i].Data)
			same(&want.Entries[i].Extensions, &got.Entries[i].Extensions)
		}
	}
}

func normalizeHeader(want, got *raft.RPCHeader) {
	same(&want.ID, &got.ID)
	same(&want.Addr, &got.Addr)
}

// same makes an empty slice and a nil one compare equal.
func same(want, got *[]byte) {
	if len(*want) == 0 && len(*got) == 0 {
		*want, *got = nil, nil
	}
}

// What the fast decoder reads, the codec reads the same: a request or
// response from a node of the older build decodes alike either way.
func TestFastWireAndCodecDecodeAlike(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	h := codecHandle(false, false)
	for i := range 200 {
		req := randomRequest(r, true)
		b, _ := raft.AppendAppendEntriesRequestWire(nil, req)
		var byCodec raft.AppendEntriesRequest
		if err := codec.NewDecoderBytes(b, h).Decode(&byCodec); err != nil {
			t.Fatalf("case %d: the codec cannot read the fast encoding: %v", i, err)
		}
		if err := sameRequest(req, &byCodec); err != nil {
			t.Fatalf("case %d: the codec reads the fast encoding differently: %v", i, err)
		}
	}
}

// FuzzFastWireRequest feeds arbitrary bytes to the request decoder: it
// must return (an error or a request), never panic or hang, and what it
// accepts must encode and decode back to the same request.
func FuzzFastWireRequest(f *testing.F) {
	r := rand.New(rand.NewPCG(7, 8))
	for range 8 {
		b, _ := raft.AppendAppendEntriesRequestWire(nil, randomRequest(r, false))
		f.Add(b)
	}
	f.Add(codecBytes(f, codecHandle(true, true), randomRequest(r, false)))
	f.Add([]byte{0x81, 0xa7, 'E', 'n', 't', 'r', 'i', 'e', 's', 0xdd, 0xff, 0xff, 0xff, 0xff}) // 4G entries claimed
	f.Add([]byte{0x81, 0xa7, 'E', 'n', 't', 'r', 'i', 'e', 's', 0x92, 0xc0, 0x80})             // a nil entry
	f.Fuzz(func(t *testing.T, b []byte) {
		var req raft.AppendEntriesRequest
		if err := raft.ReadAppendEntriesRequestWire(bufio.NewReader(bytes.NewReader(b)), &req); err != nil {
			return
		}
		again, ok := raft.AppendAppendEntriesRequestWire(nil, &req)
		if !ok {
			return // a time MarshalBinary refuses (the codec refuses it too)
		}
		var back raft.AppendEntriesRequest
		if err := raft.ReadAppendEntriesRequestWire(bufio.NewReader(bytes.NewReader(again)), &back); err != nil {
			t.Fatalf("re-encoded request does not decode: %v", err)
		}
		if err := sameRequest(&req, &back); err != nil {
			t.Fatal(err)
		}
	})
}
