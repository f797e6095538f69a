package replication

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/raft"
	"github.com/redstream/redstream/persistence"
	"github.com/redstream/redstream/server"
)

// fsm is a data group's state machine on this node: the group's
// database in the server's keyspace (writes, server.ApplyEntryAt) and the
// members' client addresses.
type fsm struct {
	srv    *server.Server
	logger *slog.Logger
	db     int // the group's database: its records, snapshots and restores

	mu    sync.Mutex
	addrs map[string]string // member ID → client host:port

	// restores counts the snapshots restored, each replacing the state
	// at once (Group.settle).
	restores atomic.Uint64
}

// newFSM is the state machine of the group whose state is database 0.
func newFSM(srv *server.Server, logger *slog.Logger) *fsm { return newGroupFSM(srv, logger, 0) }

// newGroupFSM is the state machine of a group whose state is database db.
func newGroupFSM(srv *server.Server, logger *slog.Logger, db int) *fsm {
	return &fsm{srv: srv, logger: logger, db: db, addrs: map[string]string{}}
}

// memberChange is an 'M' entry: a member's client address, recorded in
// the log before it is made a voter, or its removal.
type memberChange struct {
	ID     string `json:"id"`
	Addr   string `json:"addr,omitempty"`
	Remove bool   `json:"remove,omitempty"`
}

func encodeMember(m memberChange) []byte {
	b, _ := json.Marshal(m)
	return append([]byte{'M'}, b...)
}

// ApplyBatch applies committed entries in log order (raft.BatchingFSM).
// A write entry that cannot be applied means the log is damaged: the
// error goes to its proposer, and is logged loudly.
func (f *fsm) ApplyBatch(logs []*raft.Log) []any {
	out := make([]any, len(logs))
	for i, l := range logs {
		if l.Type != raft.LogCommand || len(l.Data) == 0 {
			continue
		}
		var err error
		switch l.Data[0] {
		case 'P':
			err = f.srv.ApplyEntryAt(f.db, l.Data)
		case 'M':
			err = f.applyMember(l.Data[1:])
		default:
			err = fmt.Errorf("unknown entry kind %q", l.Data[0])
		}
		if err != nil {
			f.logger.Error("cannot apply a committed Raft entry", "index", l.Index, "term", l.Term, "err", err)
			out[i] = err
		}
	}
	return out
}

// Apply applies one entry (raft.FSM; ApplyBatch is used instead).
func (f *fsm) Apply(l *raft.Log) any { return f.ApplyBatch([]*raft.Log{l})[0] }

func (f *fsm) applyMember(b []byte) error {
	var m memberChange
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if m.Remove {
		delete(f.addrs, m.ID)
	} else {
		f.addrs[m.ID] = m.Addr
	}
	return nil
}

func (f *fsm) clientAddrs() map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.addrs)
}

// A Raft snapshot is the members' addresses, then the group's database
// as an RDB file (its SELECTDB names the database; the same bytes SAVE
// writes for that database):
//
//	+-----------+---------------+----------------------+------------+
//	| "RSRAFT1" | uint32 BE len | members (JSON, len)  | RDB file   |
//	+-----------+---------------+----------------------+------------+
const snapshotMagic = "RSRAFT1"

// Snapshot takes the group's database copy-on-write (O(1); DESIGN
// principle 5), and nothing of other groups' databases; Persist writes it
// while the server goes on. While a BGSAVE still walks the database it
// fails, and raft tries again at its next interval: taking it would end
// the save's walk, leaving its file short of keys.
func (f *fsm) Snapshot() (raft.FSMSnapshot, error) {
	addrs := f.clientAddrs()
	snap, err := f.srv.FreezeDBs([]int{f.db}, nil)
	if err != nil {
		return nil, err
	}
	return &fsmSnapshot{snap: snap, addrs: addrs}, nil
}

type fsmSnapshot struct {
	snap  *server.Snapshot
	addrs map[string]string
}

func (s *fsmSnapshot) Persist(sink raft.SnapshotSink) error {
	err := s.write(sink)
	if err != nil {
		sink.Cancel()
		return err
	}
	return sink.Close()
}

func (s *fsmSnapshot) write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	meta, _ := json.Marshal(s.addrs)
	bw.WriteString(snapshotMagic)
	bw.Write(binary.BigEndian.AppendUint32(nil, uint32(len(meta))))
	bw.Write(meta)
	if err := persistence.WriteSnapshot(bw, s.snap, persistence.EncodeOptions{}); err != nil {
		return err
	}
	return bw.Flush()
}

func (s *fsmSnapshot) Release() { s.snap.Close() }

// Restore replaces all of the group's state with a snapshot's (raft.FSM):
// its database is built aside and swapped in whole, the other databases
// left as they are (server.RestoreDBs). A snapshot that holds another
// database's keys is refused.
func (f *fsm) Restore(rc io.ReadCloser) error {
	defer rc.Close()
	f.restores.Add(1) // before the state changes: see Group.settle
	r := bufio.NewReaderSize(rc, 1<<16)
	head := make([]byte, len(snapshotMagic)+4)
	if _, err := io.ReadFull(r, head); err != nil {
		return fmt.Errorf("replication: snapshot header: %w", err)
	}
	if string(head[:len(snapshotMagic)]) != snapshotMagic {
		return errors.New("replication: not a redstream Raft snapshot")
	}
	meta := make([]byte, binary.BigEndian.Uint32(head[len(snapshotMagic):]))
	if _, err := io.ReadFull(r, meta); err != nil {
		return fmt.Errorf("replication: snapshot members: %w", err)
	}
	addrs := map[string]string{}
	if err := json.Unmarshal(meta, &addrs); err != nil {
		return fmt.Errorf("replication: snapshot members: %w", err)
	}
	err := f.srv.RestoreDBs([]int{f.db}, func(put server.Put) error {
		_, err := persistence.ReadSnapshot(r, persistence.DecodeOptions{}, put, nil)
		return err
	})
	if err != nil {
		return fmt.Errorf("replication: restoring a snapshot: %w", err)
	}
	f.mu.Lock()
	f.addrs = addrs
	f.mu.Unlock()
	return nil
}
