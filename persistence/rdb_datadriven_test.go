package persistence

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Corruption cases live in testdata/rdb/*.txt in the datadriven style of
// pebble: a command line (plus input lines), "----", the expected output,
// a blank line. Each file keeps a current RDB image that commands build,
// damage and decode. Run with -update to rewrite the expected outputs.
//
//	load name=F              the fixture testdata/rdb/F.rdb
//	build [nochecksum] [nocompression]
//	                         encode the entries in the input lines:
//	                         "string K V", "list K V...", "stream K"
//	find hex=H               offsets where the bytes H occur
//	hex [from=N] [to=N]      a hex dump of part of the image
//	set at=N hex=H           overwrite bytes (negative N counts from the end)
//	fix-checksum             store the right checksum for the bytes now
//	decode [skip] [ignore-checksum] [at=N]
//	                         decode the image (cut to N bytes): entries or error
//	truncate-sweep           decode every proper prefix; print runs of
//	                         prefixes that fail alike (digits shown as #)
func TestRDBDataDriven(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "rdb", "*.txt"))
	if len(files) == 0 {
		t.Fatal("no datadriven files")
	}
	for _, path := range files {
		t.Run(filepath.Base(path), func(t *testing.T) { runDataDriven(t, path) })
	}
}

type ddCase struct {
	comments []string // lines before the command, kept on rewrite
	cmd      string
	input    []string
	expected string
}

func parseDataDriven(t *testing.T, path string) []ddCase {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cases []ddCase
	var comments []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			if strings.HasPrefix(line, "#") {
				comments = append(comments, line)
			}
			continue
		}
		c := ddCase{cmd: line, comments: comments}
		comments = nil
		for sc.Scan() && sc.Text() != "----" {
			c.input = append(c.input, sc.Text())
		}
		var exp []string
		for sc.Scan() && sc.Text() != "" {
			exp = append(exp, sc.Text())
		}
		c.expected = strings.Join(exp, "\n")
		cases = append(cases, c)
	}
	return cases
}

func runDataDriven(t *testing.T, path string) {
	cases := parseDataDriven(t, path)
	st := &ddState{}
	var out strings.Builder
	for _, c := range cases {
		got := strings.TrimRight(st.run(t, c), "\n")
		if !*update && got != c.expected {
			t.Errorf("%s: %s\ngot:\n%s\nwant:\n%s", path, c.cmd, got, c.expected)
		}
		for _, l := range c.comments {
			fmt.Fprintf(&out, "%s\n", l)
		}
		fmt.Fprintf(&out, "%s\n", c.cmd)
		for _, l := range c.input {
			fmt.Fprintf(&out, "%s\n", l)
		}
		fmt.Fprintf(&out, "----\n%s\n\n", got)
	}
	if *update {
		if err := os.WriteFile(path, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type ddState struct{ img []byte }

func ddArgs(cmd string) (string, map[string]string) {
	f := strings.Fields(cmd)
	args := map[string]string{}
	for _, a := range f[1:] {
		k, v, _ := strings.Cut(a, "=")
		args[k] = v
	}
	return f[0], args
}

func (s *ddState) pos(v string) int {
	n, _ := strconv.Atoi(v)
	if n < 0 {
		n += len(s.img)
	}
	return n
}

func (s *ddState) run(t *testing.T, c ddCase) string {
	name, args := ddArgs(c.cmd)
	switch name {
	case "load":
		b, err := os.ReadFile(filepath.Join("testdata", "rdb", args["name"]+".rdb"))
		if err != nil {
			t.Fatal(err)
		}
		s.img = b
		return fmt.Sprintf("%d bytes", len(b))
	case "build":
		return s.build(t, c.input, args)
	case "find":
		pat, _ := hex.DecodeString(args["hex"])
		var at []string
		for i := 0; i+len(pat) <= len(s.img); i++ {
			if bytes.Equal(s.img[i:i+len(pat)], pat) {
				at = append(at, strconv.Itoa(i))
			}
		}
		return "at " + strings.Join(at, " ")
	case "hex":
		from, to := 0, len(s.img)
		if v, ok := args["from"]; ok {
			from = s.pos(v)
		}
		if v, ok := args["to"]; ok {
			to = min(s.pos(v), len(s.img))
		}
		return strings.TrimRight(hex.Dump(s.img[from:to]), "\n")
	case "set":
		b, _ := hex.DecodeString(args["hex"])
		at := s.pos(args["at"])
		s.img = append([]byte(nil), s.img...)
		copy(s.img[at:], b)
		return "ok"
	case "fix-checksum":
		s.img = append([]byte(nil), s.img...)
		binary.LittleEndian.PutUint64(s.img[len(s.img)-8:], CRC64(s.img[:len(s.img)-8]))
		return "ok"
	case "decode":
		return s.decode(args)
	case "truncate-sweep":
		return s.sweep()
	}
	t.Fatalf("unknown command %q", c.cmd)
	return ""
}

func (s *ddState) build(t *testing.T, lines []string, args map[string]string) string {
	var es []*Entry
	for _, l := range lines {
		f := strings.Fields(l)
		e := &Entry{Key: []byte(f[1])}
		switch f[0] {
		case "string":
			e.Value = String(strings.Join(f[2:], " "))
		case "list":
			e.Value = List{lpOf(f[2:]...)}
		case "stream":
			e.Value = sampleStream()
		}
		es = append(es, e)
	}
	_, noSum := args["nochecksum"]
	_, noComp := args["nocompression"]
	s.img = encodeEntries(t, &EncodeOptions{NoChecksum: noSum, NoCompression: noComp, Ctime: time.Unix(1700000000, 0),
		RedstreamVersion: "test"}, es)
	got, _, err := decodeAll(s.img, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d bytes", len(s.img))
	for _, e := range got {
		fmt.Fprintf(&sb, "\n%q %s at %d, %d bytes", e.Key, e.Value.Type(), e.Offset, e.Size)
	}
	return sb.String()
}

func (s *ddState) decode(args map[string]string) string {
	img := s.img
	if v, ok := args["at"]; ok {
		img = img[:s.pos(v)]
	}
	_, skip := args["skip"]
	_, ignore := args["ignore-checksum"]
	es, d, err := decodeAll(img, &DecodeOptions{SkipUnsupported: skip, IgnoreChecksum: ignore})
	var sb strings.Builder
	for _, e := range es {
		fmt.Fprintf(&sb, "db %d %q %s\n", e.DB, e.Key, e.Value.Type())
	}
	if err != nil {
		fmt.Fprintf(&sb, "error: %v", err)
		return sb.String()
	}
	fmt.Fprintf(&sb, "checksum %s", d.Checksum().Status)
	return sb.String()
}

var digits = regexp.MustCompile(`[0-9]+`)

func (s *ddState) sweep() string {
	var sb strings.Builder
	start, last := 0, ""
	flush := func(end int) {
		if last != "" {
			fmt.Fprintf(&sb, "[%d,%d) %s\n", start, end, last)
		}
	}
	for n := 0; n < len(s.img); n++ {
		_, _, err := decodeAll(s.img[:n], nil)
		msg := "DECODED WITHOUT ERROR"
		if err != nil {
			msg = digits.ReplaceAllString(err.Error(), "#")
		}
		if msg != last {
			flush(n)
			start, last = n, msg
		}
	}
	flush(len(s.img))
	return sb.String()
}
