package persistence

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// manifest lists the files that together are the AOF, in the layout of
// Redis 7's multi-part AOF (appenddirname/appendfilename.manifest):
//
//	file appendonly.aof.2.base.rdb seq 2 type b
//	file appendonly.aof.2.incr.aof seq 2 type i
//	file appendonly.aof.3.incr.aof seq 3 type i
//
// Loading reads the base (an RDB snapshot), if any, then every increment
// in order. Redis also writes "type h" lines for files a rewrite replaced
// and it has yet to delete; we read them (they are never loaded) and do
// not write them. The manifest is only ever replaced whole
// (writeFileAtomic), so a crash leaves the old list or the new one, each
// complete; and a file is created before any manifest lists it, so every
// listed file exists (validate refuses a manifest where one does not).
type manifest struct {
	base    *aofFile  // nil: no base, start from an empty keyspace
	incrs   []aofFile // oldest first; the last one receives appends
	history []aofFile // type h: replaced by a rewrite, never loaded
}

type aofFile struct {
	name string
	seq  int64
}

// ErrManifest means the manifest cannot be understood, or does not agree
// with the files in the AOF directory. The server refuses to start, and
// changes nothing, until it is repaired.
var ErrManifest = errors.New("persistence: bad AOF manifest")

func (m manifest) encode() []byte {
	var b bytes.Buffer
	if m.base != nil {
		fmt.Fprintf(&b, "file %s seq %d type b\n", m.base.name, m.base.seq)
	}
	for _, f := range m.incrs {
		fmt.Fprintf(&b, "file %s seq %d type i\n", f.name, f.seq)
	}
	return b.Bytes()
}

func parseManifest(r io.Reader) (manifest, error) {
	var m manifest
	sc := bufio.NewScanner(r)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		f, typ, err := parseManifestLine(text)
		if err != nil {
			return m, fmt.Errorf("%w: line %d: %v", ErrManifest, line, err)
		}
		switch {
		case typ == "b" && m.base == nil && len(m.incrs) == 0:
			m.base = &f
		case typ == "i":
			m.incrs = append(m.incrs, f)
		case typ == "h":
			m.history = append(m.history, f)
		default:
			return m, fmt.Errorf("%w: line %d: unexpected %q file", ErrManifest, line, typ)
		}
	}
	return m, sc.Err()
}

// parseManifestLine reads "file NAME seq N type T" (keys in any order).
func parseManifestLine(text string) (aofFile, string, error) {
	words := strings.Fields(text)
	if len(words)%2 != 0 {
		return aofFile{}, "", errors.New("odd number of words")
	}
	var f aofFile
	typ := ""
	for i := 0; i < len(words); i += 2 {
		switch words[i] {
		case "file":
			f.name = words[i+1]
		case "seq":
			n, err := strconv.ParseInt(words[i+1], 10, 64)
			if err != nil || n < 1 {
				return f, "", fmt.Errorf("bad seq %q", words[i+1])
			}
			f.seq = n
		case "type":
			typ = words[i+1]
		}
	}
	if f.name == "" || f.seq == 0 || strings.ContainsAny(f.name, "/\\") || (typ != "b" && typ != "i" && typ != "h") {
		return f, "", errors.New("needs a plain file name, a seq and type b, i or h")
	}
	return f, typ, nil
}

// validate checks that m describes a loadable AOF of files named name:
// something is listed, no file twice, each name says the seq and kind it
// is listed with, increments in rising order after the base, and every
// base and increment present in dir (exists reports that). It returns the
// first problem found.
func (m manifest) validate(name string, exists func(file string) bool) error {
	if m.base == nil && len(m.incrs) == 0 {
		return errors.New("it lists no file (an empty manifest)")
	}
	seen := map[string]bool{}
	for _, f := range m.history {
		seen[f.name] = true
	}
	check := func(f aofFile, want string) error {
		switch {
		case seen[f.name]:
			return fmt.Errorf("it lists %s twice", f.name)
		case f.name != want:
			return fmt.Errorf("it lists %s with seq %d, which would be named %s", f.name, f.seq, want)
		case !exists(f.name):
			return fmt.Errorf("it lists %s, which is missing", f.name)
		}
		seen[f.name] = true
		return nil
	}
	last := int64(0)
	if m.base != nil {
		if err := check(*m.base, baseName(name, m.base.seq)); err != nil {
			return err
		}
		last = m.base.seq - 1 // the first increment may share the base's seq
	}
	for _, f := range m.incrs {
		if err := check(f, incrName(name, f.seq)); err != nil {
			return err
		}
		if f.seq <= last {
			return fmt.Errorf("it lists %s (seq %d) after seq %d: out of order", f.name, f.seq, last)
		}
		last = f.seq
	}
	return nil
}

func (m manifest) lastIncr() aofFile { return m.incrs[len(m.incrs)-1] }

// lists reports whether m lists file as its base or an increment.
func (m manifest) lists(file string) bool {
	if m.base != nil && m.base.name == file {
		return true
	}
	for _, f := range m.incrs {
		if f.name == file {
			return true
		}
	}
	return false
}

// nextSeq is the sequence number for a new file.
func (m manifest) nextSeq() int64 {
	n := int64(0)
	if m.base != nil {
		n = m.base.seq
	}
	for _, f := range m.incrs {
		n = max(n, f.seq)
	}
	return n + 1
}

func incrName(base string, seq int64) string { return fmt.Sprintf("%s.%d.incr.aof", base, seq) }
func baseName(base string, seq int64) string { return fmt.Sprintf("%s.%d.base.rdb", base, seq) }

// parseDataName reads a file name of ours, "<name>.<seq>.base.rdb" or
// "<name>.<seq>.incr.aof", into its seq and kind ('b' or 'i').
func parseDataName(name, file string) (seq int64, kind byte, ok bool) {
	rest, found := strings.CutPrefix(file, name+".")
	if !found {
		return 0, 0, false
	}
	num, suffix, found := strings.Cut(rest, ".")
	switch {
	case !found:
		return 0, 0, false
	case suffix == "base.rdb":
		kind = 'b'
	case suffix == "incr.aof":
		kind = 'i'
	default:
		return 0, 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != num {
		return 0, 0, false
	}
	return n, kind, true
}

func readManifest(fs FS, path string) (manifest, bool, error) {
	f, err := fs.OpenFile(path, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return manifest{}, false, nil
	}
	if err != nil {
		return manifest{}, false, err
	}
	defer f.Close()
	m, err := parseManifest(f)
	return m, true, err
}
