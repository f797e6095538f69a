package persistence

import (
	"bytes"
	"fmt"
	"github.com/redstream/redstream/stream"
	"io"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/redstream/redstream/listpack"
)

func sid(ms, seq uint64) stream.ID { return stream.ID{Ms: ms, Seq: seq} }

// Stream entry flags, written out here so that the tests build nodes
// from the format, not from package stream's code.
const (
	streamFlagDeleted    = 1
	streamFlagSameFields = 2
)

// mustStream builds the value of st (which must be a valid stream).
func mustStream(st *stream.State) Stream {
	s, err := stream.FromState(st)
	if err != nil {
		panic(err)
	}
	return Stream{s}
}

// sEntry is a stream entry for building test streams.
type sEntry struct {
	id      stream.ID
	fields  []string // field, value, field, value...
	deleted bool
}

// buildNode lays entries out in one stream node the way Redis does: the
// first entry's fields become the master fields, and entries with the
// same fields are stored with the SameFields flag.
func buildNode(master stream.ID, es []sEntry) listpack.Listpack {
	var mf []string
	for i := 0; i < len(es[0].fields); i += 2 {
		mf = append(mf, es[0].fields[i])
	}
	live, del := 0, 0
	for _, e := range es {
		if e.deleted {
			del++
		} else {
			live++
		}
	}
	lp := listpack.New().AppendInt(int64(live)).AppendInt(int64(del)).AppendInt(int64(len(mf)))
	for _, f := range mf {
		lp = lp.Append([]byte(f))
	}
	lp = lp.AppendInt(0)
	for _, e := range es {
		lp = appendNodeEntry(lp, master, mf, e)
	}
	return lp
}

func appendNodeEntry(lp listpack.Listpack, master stream.ID, mf []string, e sEntry) listpack.Listpack {
	var names, vals []string
	for i := 0; i < len(e.fields); i += 2 {
		names, vals = append(names, e.fields[i]), append(vals, e.fields[i+1])
	}
	flags := 0
	if e.deleted {
		flags |= streamFlagDeleted
	}
	same := slices.Equal(names, mf)
	if same {
		flags |= streamFlagSameFields
	}
	lp = lp.AppendInt(int64(flags)).AppendInt(int64(e.id.Ms - master.Ms)).AppendInt(int64(e.id.Seq - master.Seq))
	if same {
		for _, v := range vals {
			lp = lp.Append([]byte(v))
		}
		return lp.AppendInt(int64(len(vals) + 3))
	}
	lp = lp.AppendInt(int64(len(names)))
	for i := range names {
		lp = lp.Append([]byte(names[i])).Append([]byte(vals[i]))
	}
	return lp.AppendInt(int64(2*len(names) + 4))
}

// buildStream makes the state of a stream of es, perNode entries a
// node, with the counters filled in consistently.
func buildStream(es []sEntry, perNode int) *stream.State {
	s := &stream.State{}
	for i := 0; i < len(es); i += perNode {
		part := es[i:min(i+perNode, len(es))]
		s.Nodes = append(s.Nodes, stream.Node{Master: part[0].id, Listpack: buildNode(part[0].id, part)})
	}
	for _, e := range es {
		if e.deleted {
			s.MaxDeletedID = e.id
			continue
		}
		if s.Length == 0 {
			s.FirstID = e.id
		}
		s.Length++
	}
	s.EntriesAdded = uint64(len(es))
	if len(es) > 0 {
		s.LastID = es[len(es)-1].id
	}
	return s
}

// streamEntries decodes the entries of a stream's nodes as text.
func streamEntries(s *stream.State) []string {
	var out []string
	for _, n := range s.Nodes {
		out = append(out, nodeEntries(n)...)
	}
	return out
}

func nodeEntries(n stream.Node) []string {
	lp := n.Listpack
	off := lp.First()
	next := func() []byte {
		v := lp.Get(off, nil)
		off = lp.Next(off)
		return v
	}
	nextInt := func() int64 { v, _ := strconv.ParseInt(string(next()), 10, 64); return v }
	live, del := nextInt(), nextInt()
	mf := make([]string, nextInt())
	for i := range mf {
		mf[i] = string(next())
	}
	next() // master terminator
	var out []string
	for range live + del {
		flags := nextInt()
		id := sid(n.Master.Ms+uint64(nextInt()), n.Master.Seq+uint64(nextInt()))
		var sb strings.Builder
		if flags&streamFlagDeleted != 0 {
			sb.WriteString("(deleted) ")
		}
		sb.WriteString(id.String())
		if flags&streamFlagSameFields != 0 {
			for _, f := range mf {
				fmt.Fprintf(&sb, " %s=%s", f, next())
			}
		} else {
			for range nextInt() {
				f := next()
				fmt.Fprintf(&sb, " %s=%s", f, next())
			}
		}
		next() // lp-count
		out = append(out, sb.String())
	}
	return out
}

// dumpEntry renders an entry for golden files and comparisons.
func dumpEntry(w io.Writer, e *Entry) {
	fmt.Fprintf(w, "db %d %q %s", e.DB, e.Key, e.Value.Type())
	if e.HasExpire {
		fmt.Fprintf(w, " expire-at=%d", e.ExpireAt)
	}
	switch v := e.Value.(type) {
	case String:
		fmt.Fprintf(w, " %q\n", clip(v))
	case List:
		fmt.Fprintf(w, " len=%d nodes=%d:", v.Len(), len(v))
		i := 0
		q := listpack.QuicklistFromNodes(listpack.DefaultFill, slices.Clone(v))
		q.Iter(false, func(_ int, b []byte) bool {
			if i < 8 || i == v.Len()-1 {
				fmt.Fprintf(w, " %q", clip(b))
			} else if i == 8 {
				fmt.Fprint(w, " ...")
			}
			i++
			return true
		})
		fmt.Fprintln(w)
	case Stream:
		st := v.State()
		dumpStream(w, &st)
	case Skipped:
		fmt.Fprintf(w, " skipped rdb-type=%d len=%d\n", v.RDBType, v.Len)
	}
}

func clip(b []byte) string {
	if len(b) > 40 {
		return fmt.Sprintf("%s...(%d bytes)", b[:20], len(b))
	}
	return string(b)
}

func dumpStream(w io.Writer, s *stream.State) {
	fmt.Fprintf(w, " length=%d last=%s first=%s max-deleted=%s added=%d nodes=%d\n",
		s.Length, s.LastID, s.FirstID, s.MaxDeletedID, s.EntriesAdded, len(s.Nodes))
	es := streamEntries(s)
	for i, e := range es {
		if i < 6 || i == len(es)-1 {
			fmt.Fprintf(w, "  %s\n", e)
		} else if i == 6 {
			fmt.Fprintf(w, "  ... %d more\n", len(es)-7)
		}
	}
	for _, g := range s.Groups {
		fmt.Fprintf(w, "  group %q last=%s read=%d pending=%d\n", g.Name, g.LastID, g.EntriesRead, len(g.PEL))
		if p := g.Policy; !p.IsZero() || g.DeadLettered != 0 {
			fmt.Fprintf(w, "   policy max=%d dlq=%q wait=%d backoff=%v dead=%d\n", p.MaxDeliver, p.DeadLetter, p.AckWait, p.Backoff, g.DeadLettered)
		}
		for _, p := range g.PEL {
			fmt.Fprintf(w, "   pending %s time=%d count=%d\n", p.ID, p.DeliveryTime, p.DeliveryCount)
		}
		for _, c := range g.Consumers {
			fmt.Fprintf(w, "   consumer %q seen=%d active=%d pel=%v\n", c.Name, c.SeenTime, c.ActiveTime, c.PEL)
		}
	}
	if r := s.Retention; r.MaxAge != 0 {
		fmt.Fprintf(w, "  max-age=%d refs=%d\n", r.MaxAge, r.Refs)
	}
	for _, e := range s.Delayed {
		fmt.Fprintf(w, "  delayed %s %q\n", e.ID, e.Fields)
	}
	if m := s.IDMP; m != nil {
		fmt.Fprintf(w, "  idmp duration=%d maxsize=%d added=%d dups=%d\n", m.Duration, m.MaxSize, m.Added, m.Duplicates)
		for _, p := range m.Producers {
			for _, e := range p.IIDs {
				fmt.Fprintf(w, "   %q %q -> %s at %d\n", p.PID, e.IID, e.ID, e.Time)
			}
		}
	}
}

// decodeAll decodes b completely and returns the entries and decoder.
func decodeAll(b []byte, opt *DecodeOptions) ([]*Entry, *Decoder, error) {
	d := NewDecoder(bytes.NewReader(b), opt)
	var out []*Entry
	for {
		e, err := d.Next()
		if err == io.EOF {
			return out, d, nil
		}
		if err != nil {
			return out, d, err
		}
		out = append(out, e)
	}
}

// dumpAll renders entries as dumpEntry does.
func dumpAll(es []*Entry) string {
	var sb strings.Builder
	for _, e := range es {
		dumpEntry(&sb, e)
	}
	return sb.String()
}

// encodeEntries writes entries (grouped by their DB field, in order) with
// opt and returns the file.
func encodeEntries(t testing.TB, opt *EncodeOptions, es []*Entry) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := NewEncoder(&buf, opt)
	db := -1
	for _, ent := range es {
		if ent.DB != db {
			db = ent.DB
			if err := e.SelectDB(db, 0, 0); err != nil {
				t.Fatal(err)
			}
		}
		if err := e.WriteEntry(ent); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
