package server

import (
	"runtime/metrics"

	"github.com/redstream/redstream/listpack"
	"github.com/redstream/redstream/stream"
)

// Memory accounting. maxmemory and INFO's used_memory count what the
// keys hold, as MEMORY USAGE estimates it, plus the clients' buffers —
// not the Go heap, which also holds garbage not yet collected (a heap
// sample refused writes whenever a burst of big replies had not been
// collected yet, with the data far below the limit).
//
// Each object carries the bytes last counted for it (Object.mem); each
// DB the sum over its keys (DB.used). A key is counted when it is
// inserted, uncounted when removed, and counted again after any write
// command that looked it up for writing (recount): the lookup is where a
// command gets the object it may change in place. Counting is O(1) for
// strings and lists and O(groups + consumers) for a stream, whose node
// bytes are kept as entries come and go.

// resizedKey is an object a write command looked up: its size is counted
// again once the command has run.
type resizedKey struct {
	db  *DB
	key string
	o   *Object
}

// count counts a newly inserted object. Lock should be held.
func (db *DB) count(key string, o *Object) {
	o.mem = memoryUsage(key, o)
	db.used += o.mem
}

// recount counts again the objects the command just run looked up for
// writing, if they are still stored. Lock should be held.
func (sh *Shard) recount() {
	for i, r := range sh.resized {
		if r.db.keys[r.key] == r.o {
			n := memoryUsage(r.key, r.o)
			r.db.used += n - r.o.mem
			r.o.mem = n
			sh.noteDelayed(r.db, r.key, r.o) // it may have gained a delayed entry
		}
		sh.resized[i] = resizedKey{}
	}
	sh.resized = sh.resized[:0]
}

// datasetBytes is what all keys hold. Lock should be held.
func (sh *Shard) datasetBytes() int64 {
	var n int64
	for _, db := range sh.dbs {
		n += db.used
	}
	return n
}

// usedMemory is what maxmemory is compared with: what the server took
// before any data, the dataset, and the clients' buffers (sampled once a
// second). Lock should be held.
func (s *Server) usedMemory() int64 {
	return s.startupBytes + s.shard.datasetBytes() + s.stats.memClientsNormal
}

// heapInUse is the Go heap's live and not yet collected objects.
func heapInUse() int64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return int64(sample[0].Value.Uint64())
}

// memoryUsage estimates the bytes key and o take, for MEMORY USAGE and
// the accounting above.
func memoryUsage(key string, o *Object) int64 {
	const objectOverhead = 16 + 48 // map entry + Object
	n := int64(len(key) + objectOverhead)
	switch v := o.value.(type) {
	case []byte:
		n += int64(cap(v))
	case *listpack.Quicklist:
		n += int64(v.Bytes())
	case *stream.Stream:
		n += v.MemoryUsage()
	}
	return n
}
