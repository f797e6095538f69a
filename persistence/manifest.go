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
// in order. The manifest is only ever replaced whole (writeFileAtomic), so
// a crash leaves the old list or the new one, each complete.
type manifest struct {
	base  *aofFile  // nil: no base, start from an empty keyspace
	incrs []aofFile // oldest first; the last one receives appends
}

type aofFile struct {
	name string
	seq  int64
}

// ErrManifest means the manifest file cannot be understood.
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
			if err != nil {
				return f, "", fmt.Errorf("bad seq %q", words[i+1])
			}
			f.seq = n
		case "type":
			typ = words[i+1]
		}
	}
	if f.name == "" || strings.ContainsAny(f.name, "/\\") || (typ != "b" && typ != "i") {
		return f, "", errors.New("needs a plain file name and type b or i")
	}
	return f, typ, nil
}

func (m manifest) lastIncr() aofFile { return m.incrs[len(m.incrs)-1] }

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
