package cli

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/redstream/redstream/persistence"
	"github.com/schollz/progressbar/v3"
	ucli "github.com/urfave/cli/v2"
	"golang.org/x/term"
)

// progressMinBytes is the file size from which `snapshot inspect` shows
// progress by itself (--progress auto).
var progressMinBytes int64 = 64 << 20

// snapshotCommand is `redstream snapshot`: tools for RDB snapshot files.
func snapshotCommand() *ucli.Command {
	return &ucli.Command{
		Name:        "snapshot",
		Usage:       "work with RDB snapshot files",
		Subcommands: []*ucli.Command{snapshotSaveCommand(), snapshotInspectCommand(), snapshotRestoreCommand()},
	}
}

func snapshotInspectCommand() *ucli.Command {
	return &ucli.Command{
		Name:      "inspect",
		Usage:     "show what an RDB file holds: keys, types, lengths, groups, sizes, version, checksum",
		ArgsUsage: "FILE",
		Description: "Reads an RDB file (versions 9 to 12, as Redis 6.0 to 7.4 and redstream write them) without\n" +
			"loading it, and reports its version, aux fields, checksum status, per-db counts and every key with\n" +
			"its type, length, size in the file, expiry and, for streams, consumer groups and pending counts.\n" +
			"Types redstream does not serve (hashes, sets, sorted sets, modules) are listed, not decoded.\n" +
			"Exits with an error if the file is damaged or its checksum does not match.",
		Flags: []ucli.Flag{
			&ucli.BoolFlag{Name: "json", Usage: "print the report as JSON"},
			&ucli.BoolFlag{Name: "summary", Usage: "leave out the per-key list"},
			&ucli.StringFlag{Name: "progress", Value: "auto",
				Usage: "auto (a bar on a terminal, lines otherwise, for files of 64 MiB or more), bar, lines or off"},
		},
		Action: runSnapshotInspect,
	}
}

// inspectReport is what `snapshot inspect` finds; --json prints it as is.
type inspectReport struct {
	File      string            `json:"file"`
	Size      int64             `json:"size"`
	Version   int               `json:"version"`
	Checksum  inspectChecksum   `json:"checksum"`
	Aux       map[string]string `json:"aux"`
	DBs       []inspectDB       `json:"dbs"`
	Types     map[string]int    `json:"types"`
	Functions int               `json:"functions_skipped"`
	ModuleAux int               `json:"module_aux_skipped"`
	EmptyKeys int               `json:"empty_keys_dropped"`
	Keys      []inspectKey      `json:"keys,omitempty"`
	Error     string            `json:"error,omitempty"`
}

type inspectChecksum struct {
	Status   string `json:"status"`
	Stored   string `json:"stored,omitempty"`
	Computed string `json:"computed,omitempty"`
}

type inspectDB struct {
	DB      int   `json:"db"`
	Keys    int   `json:"keys"`
	Expires int   `json:"expires"`
	Bytes   int64 `json:"bytes"`
}

type inspectKey struct {
	DB        int            `json:"db"`
	Key       string         `json:"key"`
	KeyBase64 string         `json:"key_base64,omitempty"` // when the key is not UTF-8
	Type      string         `json:"type"`
	Length    int64          `json:"length"` // elements; bytes for a string; -1 if not known
	Bytes     int64          `json:"bytes"`  // size in the file
	ExpireAt  *int64         `json:"expire_at_ms,omitempty"`
	Nodes     int            `json:"nodes,omitempty"`
	Groups    []inspectGroup `json:"groups,omitempty"`
}

type inspectGroup struct {
	Name          string `json:"name"`
	LastDelivered string `json:"last_delivered_id"`
	EntriesRead   int64  `json:"entries_read"`
	Pending       int    `json:"pending"`
	Consumers     int    `json:"consumers"`
}

func runSnapshotInspect(c *ucli.Context) error {
	if c.NArg() != 1 {
		return fmt.Errorf("snapshot inspect takes one FILE argument (see --help)")
	}
	path := c.Args().First()
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	prog, err := newProgress(c.String("progress"), c.App.ErrWriter, fi.Size())
	if err != nil {
		return err
	}
	rep, derr := inspectFile(f, path, fi.Size(), !c.Bool("summary"), prog)
	prog.done()
	if err := printReport(c.App.Writer, rep, c.Bool("json")); err != nil {
		return err
	}
	return derr
}

// inspectFile decodes the file, skipping what redstream does not serve,
// and builds the report. A decoding error or a checksum mismatch is
// returned after the report has been filled in as far as it got.
func inspectFile(f *os.File, path string, size int64, keys bool, prog progress) (*inspectReport, error) {
	rep := &inspectReport{File: path, Size: size, Aux: map[string]string{}, Types: map[string]int{}}
	d := persistence.NewDecoder(f, &persistence.DecodeOptions{SkipUnsupported: true, IgnoreChecksum: true, Size: size})
	dbs := map[int]*inspectDB{}
	var err error
	for {
		var e *persistence.Entry
		if e, err = d.Next(); err != nil {
			break
		}
		prog.set(d.Offset())
		rep.add(e, dbs, keys)
	}
	rep.finish(d, dbs)
	if errors.Is(err, io.EOF) {
		err = nil
		if sum := d.Checksum(); sum.Status == persistence.ChecksumMismatch {
			err = fmt.Errorf("%w: expected %#016x (computed over the file), found %#016x",
				persistence.ErrRDBChecksum, sum.Computed, sum.Stored)
		}
	}
	err = persistence.DiagnoseDamage(f, size, err)
	if errors.Is(err, persistence.ErrRDBChecksum) {
		rep.Checksum.Status = persistence.ChecksumMismatch.String()
	}
	if err != nil {
		rep.Error = userMessage(err)
	}
	return rep, err
}

// add counts one entry into the report.
func (rep *inspectReport) add(e *persistence.Entry, dbs map[int]*inspectDB, keys bool) {
	db := dbs[e.DB]
	if db == nil {
		db = &inspectDB{DB: e.DB}
		dbs[e.DB] = db
	}
	db.Keys++
	db.Bytes += e.Size
	if e.HasExpire {
		db.Expires++
	}
	rep.Types[e.Value.Type()]++
	if keys {
		rep.Keys = append(rep.Keys, describeKey(e))
	}
}

// finish copies what the decoder knows once it stopped.
func (rep *inspectReport) finish(d *persistence.Decoder, dbs map[int]*inspectDB) {
	rep.Version, _ = d.Version()
	for _, a := range d.Aux() {
		rep.Aux[a.Name] = a.Value
	}
	for _, db := range dbs {
		rep.DBs = append(rep.DBs, *db)
	}
	sort.Slice(rep.DBs, func(i, j int) bool { return rep.DBs[i].DB < rep.DBs[j].DB })
	st := d.Stats()
	rep.Functions, rep.ModuleAux, rep.EmptyKeys = st.SkippedFuncs, st.SkippedModAux, st.EmptyKeys
	sum := d.Checksum()
	rep.Checksum = inspectChecksum{Status: sum.Status.String()}
	if sum.Status == persistence.ChecksumOK || sum.Status == persistence.ChecksumMismatch {
		rep.Checksum.Stored = fmt.Sprintf("%#016x", sum.Stored)
		rep.Checksum.Computed = fmt.Sprintf("%#016x", sum.Computed)
	}
}

// describeKey summarizes one entry.
func describeKey(e *persistence.Entry) inspectKey {
	k := inspectKey{DB: e.DB, Key: string(e.Key), Type: e.Value.Type(), Bytes: e.Size}
	if !utf8.Valid(e.Key) {
		k.KeyBase64 = base64.StdEncoding.EncodeToString(e.Key)
	}
	if e.HasExpire {
		at := e.ExpireAt
		k.ExpireAt = &at
	}
	switch v := e.Value.(type) {
	case persistence.String:
		k.Length = int64(len(v))
	case persistence.List:
		k.Length, k.Nodes = int64(v.Len()), len(v)
	case persistence.Stream:
		k.Length, k.Nodes = int64(v.Len()), v.Nodes()
		for _, g := range v.State().Groups {
			k.Groups = append(k.Groups, inspectGroup{Name: string(g.Name), LastDelivered: g.LastID.String(),
				EntriesRead: g.EntriesRead, Pending: len(g.PEL), Consumers: len(g.Consumers)})
		}
	case persistence.Skipped:
		k.Length = v.Len
	}
	return k
}

func printReport(w io.Writer, rep *inspectReport, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	printHeader(w, rep)
	if len(rep.Keys) > 0 {
		fmt.Fprintln(w, "keys:")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, k := range rep.Keys {
			printKey(tw, k)
		}
		tw.Flush()
	}
	if rep.Error != "" {
		fmt.Fprintf(w, "error:     %s\n", rep.Error)
	}
	return nil
}

// rdbVersions names the Redis releases that write each RDB version.
var rdbVersions = map[int]string{9: "Redis 5.0 to 6.2", 10: "Redis 7.0", 11: "Redis 7.2", 12: "Redis 7.4"}

// versionText describes an RDB version for the report.
func versionText(v int) string {
	if v == 0 {
		return "none: not an RDB file (it does not start with REDIS and a version)"
	}
	if writers, ok := rdbVersions[v]; ok {
		return fmt.Sprintf("%d (%s)", v, writers)
	}
	return fmt.Sprintf("%d (unknown: redstream reads %d to %d)", v, persistence.MinRDBVersion, persistence.MaxRDBVersion)
}

func printHeader(w io.Writer, rep *inspectReport) {
	fmt.Fprintf(w, "file:      %s (%d bytes)\n", rep.File, rep.Size)
	fmt.Fprintf(w, "version:   %s\n", versionText(rep.Version))
	fmt.Fprintf(w, "checksum:  %s", rep.Checksum.Status)
	if rep.Checksum.Stored != "" {
		fmt.Fprintf(w, " (stored %s, computed %s)", rep.Checksum.Stored, rep.Checksum.Computed)
	}
	fmt.Fprintln(w)
	names := make([]string, 0, len(rep.Aux))
	for n := range rep.Aux {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "aux:       %s=%s\n", n, rep.Aux[n])
	}
	for _, db := range rep.DBs {
		fmt.Fprintf(w, "db %d:      %d keys, %d with expiry, %d bytes\n", db.DB, db.Keys, db.Expires, db.Bytes)
	}
	fmt.Fprintf(w, "types:     %s\n", typeCounts(rep.Types))
	if rep.Functions+rep.ModuleAux+rep.EmptyKeys > 0 {
		fmt.Fprintf(w, "skipped:   %d function libraries, %d module aux sections, %d empty keys\n",
			rep.Functions, rep.ModuleAux, rep.EmptyKeys)
	}
}

func typeCounts(types map[string]int) string {
	var parts []string
	for t, n := range types {
		parts = append(parts, fmt.Sprintf("%s %d", t, n))
	}
	sort.Strings(parts)
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// printKey writes one key line (and its groups) to a tabwriter.
func printKey(w io.Writer, k inspectKey) {
	extra := ""
	if k.Nodes > 0 {
		extra = fmt.Sprintf("%d nodes", k.Nodes)
	}
	if k.ExpireAt != nil {
		extra += " expires " + time.UnixMilli(*k.ExpireAt).UTC().Format(time.RFC3339Nano)
	}
	fmt.Fprintf(w, "  db %d\t%s\t%q\tlen %d\t%d bytes\t%s\n", k.DB, k.Type, k.Key, k.Length, k.Bytes, strings.TrimSpace(extra))
	for _, g := range k.Groups {
		fmt.Fprintf(w, "\t\t  group %q\tlast %s\tread %d\tpending %d, consumers %d\t\n",
			g.Name, g.LastDelivered, g.EntriesRead, g.Pending, g.Consumers)
	}
}

// progress reports how far through the file the decoder is.
type progress interface {
	set(offset int64)
	done()
}

// checkProgressMode refuses a --progress value newProgress does not know,
// before any work starts.
func checkProgressMode(mode string) error {
	switch mode {
	case "auto", "bar", "lines", "off":
		return nil
	}
	return fmt.Errorf("--progress must be auto, bar, lines or off, not %q", mode)
}

// newProgress picks the progress display for mode and a file of size
// bytes written about on w.
func newProgress(mode string, w io.Writer, size int64) (progress, error) {
	if err := checkProgressMode(mode); err != nil {
		return nil, err
	}
	switch mode {
	case "auto":
		if size < progressMinBytes {
			return noProgress{}, nil
		}
		if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			return newBarProgress(w, size), nil
		}
		return &lineProgress{w: w, size: size}, nil
	case "bar":
		return newBarProgress(w, size), nil
	case "lines":
		return &lineProgress{w: w, size: size}, nil
	}
	return noProgress{}, nil // off
}

type noProgress struct{}

func (noProgress) set(int64) {}
func (noProgress) done()     {}

type barProgress struct{ bar *progressbar.ProgressBar }

func newBarProgress(w io.Writer, size int64) *barProgress {
	return &barProgress{bar: progressbar.NewOptions64(size,
		progressbar.OptionSetWriter(w), progressbar.OptionSetDescription("inspect"),
		progressbar.OptionShowBytes(true), progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionClearOnFinish())}
}

func (b *barProgress) set(off int64) { b.bar.Set64(off) }
func (b *barProgress) done()         { b.bar.Finish() }

// lineProgress prints a line at every further tenth of the file.
type lineProgress struct {
	w          io.Writer
	size, next int64
}

func (l *lineProgress) set(off int64) {
	if l.size <= 0 || off < l.next {
		return
	}
	pct := off * 100 / l.size
	fmt.Fprintf(l.w, "inspect: %d%% (%d of %d bytes)\n", pct, off, l.size)
	l.next = (pct/10 + 1) * l.size / 10
}

func (l *lineProgress) done() {
	if l.next > 0 {
		fmt.Fprintf(l.w, "inspect: done (%d bytes)\n", l.size)
	}
}
