package persistence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// memFS is an in-memory FS that can crash, in the spirit of pebble's
// vfs.NewStrictMem. Each file has its current bytes (what readers see,
// and what survives kill -9: the page cache) and its durable bytes (what
// survives a power cut), which File.Sync brings up to date. syncData
// falls back to File.Sync for a File that is not an *os.File, so Sync is
// the only durability call it needs. A directory entry (a create, a
// rename, a remove, a new directory) becomes durable only at SyncDir of
// the directory that holds it. crash returns what either kind of crash
// leaves behind, as a new memFS.
//
// Paths are absolute; "/" always exists. One lock guards everything, so
// it is safe for concurrent use.
type memFS struct {
	mu      sync.Mutex
	names   map[string]*memNode // the tree the running process sees
	durable map[string]*memNode // the entries a power cut leaves (SyncDir updates them)
	// dropSyncs makes a broken disk (the checkers' positive control):
	// File.Sync of a file it picks reports success and makes nothing
	// durable.
	dropSyncs func(path string) bool
}

type memNode struct {
	dir    bool
	data   memData // current contents
	synced memData // contents as of the last File.Sync
}

// memPage is the unit memData shares.
const memPage = 4096

// memData is a file's contents: its size and its pages. A page is never
// changed once made (a write makes new ones), so a copy of the contents
// (a sync, a crash image) copies only the list: an fsync-always
// increment runs on in a megabyte of fill, synced at every write. A nil
// page is zeros, and so is everything past the size in the last page.
type memData struct {
	size  int
	pages []*[memPage]byte
}

func newMemFS() *memFS {
	root := &memNode{dir: true}
	return &memFS{names: map[string]*memNode{"/": root}, durable: map[string]*memNode{"/": root}}
}

func (d memData) clone() memData { return memData{d.size, slices.Clone(d.pages)} }

func (d memData) same(e memData) bool { return d.size == e.size && slices.Equal(d.pages, e.pages) }

func (d memData) bytes() []byte {
	b := make([]byte, d.size)
	d.readAt(b, 0)
	return b
}

// readAt copies what lies at off into p and returns how much it copied.
func (d memData) readAt(p []byte, off int) int {
	n := 0
	for n < len(p) && off+n < d.size {
		i, o := (off+n)/memPage, (off+n)%memPage
		chunk := min(memPage-o, len(p)-n, d.size-off-n)
		if pg := d.pages[i]; pg != nil {
			copy(p[n:n+chunk], pg[o:])
		} else {
			clear(p[n : n+chunk])
		}
		n += chunk
	}
	return n
}

func (d *memData) writeAt(p []byte, off int) {
	if end := off + len(p); end > d.size {
		d.resize(end)
	}
	for n := 0; n < len(p); {
		i, o := (off+n)/memPage, (off+n)%memPage
		chunk := min(memPage-o, len(p)-n)
		pg := new([memPage]byte)
		if old := d.pages[i]; old != nil && chunk < memPage {
			*pg = *old
		}
		copy(pg[o:], p[n:n+chunk])
		d.pages[i] = pg
		n += chunk
	}
}

// resize cuts or zero-extends the contents.
func (d *memData) resize(size int) {
	if o := size % memPage; size < d.size && o != 0 && d.pages[size/memPage] != nil {
		pg := new([memPage]byte) // the cut part of the last page is zeros again
		copy(pg[:o], d.pages[size/memPage][:o])
		d.pages[size/memPage] = pg
	}
	n := (size + memPage - 1) / memPage
	if n <= len(d.pages) {
		clear(d.pages[n:])
		d.pages = d.pages[:n]
	} else {
		d.pages = append(d.pages, make([]*[memPage]byte, n-len(d.pages))...)
	}
	d.size = size
}

func memErr(op, path string, err error) error { return &os.PathError{Op: op, Path: path, Err: err} }

// dirOf returns the directory node that holds path, or an error.
func (m *memFS) dirOf(op, path string) error {
	if d := m.names[filepath.Dir(path)]; d == nil || !d.dir {
		return memErr(op, path, os.ErrNotExist)
	}
	return nil
}

// OpenFile opens or creates a file.
func (m *memFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.names[name]
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, memErr("open", name, os.ErrNotExist)
	case n == nil:
		if err := m.dirOf("open", name); err != nil {
			return nil, err
		}
		n = &memNode{}
		m.names[name] = n
	case flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0:
		return nil, memErr("open", name, os.ErrExist)
	case n.dir && flag&(os.O_WRONLY|os.O_RDWR) != 0:
		return nil, memErr("open", name, syscall.EISDIR)
	}
	if flag&os.O_TRUNC != 0 {
		n.data.resize(0)
	}
	return &memFile{fs: m, n: n, name: name, flag: flag}, nil
}

// Rename moves a file (directories are not needed, nor supported).
func (m *memFS) Rename(oldpath, newpath string) error {
	oldpath, newpath = filepath.Clean(oldpath), filepath.Clean(newpath)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.names[oldpath]
	switch {
	case n == nil:
		return memErr("rename", oldpath, os.ErrNotExist)
	case n.dir:
		return memErr("rename", oldpath, syscall.EXDEV) // not modelled
	case m.names[newpath] != nil && m.names[newpath].dir:
		return memErr("rename", newpath, syscall.EISDIR)
	}
	if err := m.dirOf("rename", newpath); err != nil {
		return err
	}
	delete(m.names, oldpath)
	m.names[newpath] = n
	return nil
}

// Remove removes a file or an empty directory.
func (m *memFS) Remove(name string) error {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.names[name]
	switch {
	case n == nil || name == "/":
		return memErr("remove", name, os.ErrNotExist)
	case n.dir && len(m.children(m.names, name)) > 0:
		return memErr("remove", name, syscall.ENOTEMPTY)
	}
	delete(m.names, name)
	return nil
}

// MkdirAll creates a directory and its missing parents.
func (m *memFS) MkdirAll(path string, perm os.FileMode) error {
	path = filepath.Clean(path)
	m.mu.Lock()
	defer m.mu.Unlock()
	var todo []string
	for p := path; p != "/"; p = filepath.Dir(p) {
		todo = append(todo, p)
	}
	for _, p := range slices.Backward(todo) {
		switch n := m.names[p]; {
		case n == nil:
			m.names[p] = &memNode{dir: true}
		case !n.dir:
			return memErr("mkdir", p, syscall.ENOTDIR)
		}
	}
	return nil
}

// ReadDir lists a directory, sorted by name.
func (m *memFS) ReadDir(name string) ([]os.DirEntry, error) {
	name = filepath.Clean(name)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.names[name]; n == nil || !n.dir {
		return nil, memErr("readdir", name, os.ErrNotExist)
	}
	var out []os.DirEntry
	for _, p := range m.children(m.names, name) {
		out = append(out, iofs.FileInfoToDirEntry(m.names[p].info(p)))
	}
	return out, nil
}

// SyncDir makes the entries of dir durable as they are now.
func (m *memFS) SyncDir(dir string) error {
	dir = filepath.Clean(dir)
	m.mu.Lock()
	defer m.mu.Unlock()
	if n := m.names[dir]; n == nil || !n.dir {
		return memErr("sync", dir, os.ErrNotExist)
	}
	for _, p := range m.children(m.durable, dir) {
		if m.names[p] == nil {
			delete(m.durable, p)
		}
	}
	for _, p := range m.children(m.names, dir) {
		m.durable[p] = m.names[p]
	}
	return nil
}

// children lists the entries of tree directly under dir, sorted.
func (m *memFS) children(tree map[string]*memNode, dir string) []string {
	var out []string
	for p := range tree {
		if p != "/" && filepath.Dir(p) == dir {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// crashKind is how the process stops.
type crashKind int

const (
	crashKill  crashKind = iota // kill -9: the page cache survives, so the current state does
	crashPower                  // a power cut: only what was made durable survives
)

func (k crashKind) String() string { return [...]string{"kill", "power"}[k] }

// crash returns the file system a restart after a crash of kind k would
// find, as a new memFS whose state is all durable.
func (m *memFS) crash(k crashKind) *memFS {
	m.mu.Lock()
	defer m.mu.Unlock()
	img := newMemFS()
	tree := m.names
	if k == crashPower {
		tree = m.durable
	}
	for p, n := range tree {
		if p == "/" || (k == crashPower && !m.durableParents(p)) {
			continue
		}
		data := n.data
		if k == crashPower {
			data = n.synced
		}
		c := &memNode{dir: n.dir, data: data.clone(), synced: data.clone()}
		img.names[p], img.durable[p] = c, c
	}
	img.dropSyncs = m.dropSyncs
	return img
}

// durableParents reports whether every directory above p has a durable
// entry: a file in a directory that a power cut loses is lost with it.
func (m *memFS) durableParents(p string) bool {
	for d := filepath.Dir(p); d != "/"; d = filepath.Dir(d) {
		if n := m.durable[d]; n == nil || !n.dir {
			return false
		}
	}
	return true
}

// sameAs reports whether m and o hold the same tree, with the same
// contents (the same pages: a copy of the other), durable or not.
func (m *memFS) sameAs(o *memFS) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(m.names) != len(o.names) || len(m.durable) != len(o.durable) {
		return false
	}
	for p, n := range m.names {
		c := o.names[p]
		if c == nil || c.dir != n.dir || !c.data.same(n.data) || !c.synced.same(n.synced) || (m.durable[p] == nil) != (o.durable[p] == nil) {
			return false
		}
	}
	return true
}

// mkdirDurable creates path and makes it, and its parents, durable.
func (m *memFS) mkdirDurable(path string) {
	if err := m.MkdirAll(path, 0o755); err != nil {
		panic(err)
	}
	for p := filepath.Clean(path); p != "/"; p = filepath.Dir(p) {
		m.SyncDir(filepath.Dir(p))
	}
}

// writeDurable writes a whole file durably (test setup).
func (m *memFS) writeDurable(path string, data []byte) {
	m.mu.Lock()
	n := &memNode{}
	n.data.writeAt(data, 0)
	n.synced = n.data.clone()
	m.names[path], m.durable[path] = n, n
	m.mu.Unlock()
}

// readFile returns a file's current contents.
func (m *memFS) readFile(path string) ([]byte, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := m.names[filepath.Clean(path)]
	if n == nil || n.dir {
		return nil, false
	}
	return n.data.bytes(), true
}

// String lists the tree: each file with its size, and what a power cut
// would leave of it.
func (m *memFS) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var b strings.Builder
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range m.names {
			if !yield(p) {
				return
			}
		}
	}) {
		n := m.names[p]
		switch {
		case p == "/":
		case n.dir:
			fmt.Fprintf(&b, "  %s/\n", p)
		case m.durable[p] == n:
			fmt.Fprintf(&b, "  %s %d bytes (%d durable)\n", p, n.data.size, n.synced.size)
		default:
			fmt.Fprintf(&b, "  %s %d bytes (name not durable)\n", p, n.data.size)
		}
	}
	return b.String()
}

func (n *memNode) info(path string) os.FileInfo {
	return memInfo{name: filepath.Base(path), size: int64(n.data.size), dir: n.dir}
}

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string       { return i.name }
func (i memInfo) Size() int64        { return i.size }
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
func (i memInfo) Mode() os.FileMode {
	if i.dir {
		return os.ModeDir | 0o755
	}
	return 0o644
}

// memFile is an open file of a memFS.
type memFile struct {
	fs     *memFS
	n      *memNode
	name   string
	flag   int
	pos    int64
	closed bool
}

// access checks that f is open, for writing if write is set, else for
// reading. f.fs.mu must be held.
func (f *memFile) access(op string, write bool) error {
	mode := f.flag & (os.O_RDONLY | os.O_WRONLY | os.O_RDWR)
	switch {
	case f.closed:
		return memErr(op, f.name, os.ErrClosed)
	case write && mode == os.O_RDONLY, !write && mode == os.O_WRONLY:
		return memErr(op, f.name, syscall.EBADF)
	}
	return nil
}

func (f *memFile) Read(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.access("read", false); err != nil {
		return 0, err
	}
	if f.pos >= int64(f.n.data.size) {
		return 0, io.EOF
	}
	n := f.n.data.readAt(p, int(f.pos))
	f.pos += int64(n)
	return n, nil
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.access("read", false); err != nil {
		return 0, err
	}
	if off >= int64(f.n.data.size) {
		return 0, io.EOF
	}
	n := f.n.data.readAt(p, int(off))
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.access("write", true); err != nil {
		return 0, err
	}
	if f.flag&os.O_APPEND != 0 {
		f.pos = int64(f.n.data.size)
	}
	f.n.data.writeAt(p, int(f.pos))
	f.pos += int64(len(p))
	return len(p), nil
}

func (f *memFile) WriteAt(p []byte, off int64) (int, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.access("write", true); err != nil {
		return 0, err
	}
	f.n.data.writeAt(p, int(off))
	return len(p), nil
}

func (f *memFile) Seek(offset int64, whence int) (int64, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return 0, memErr("seek", f.name, os.ErrClosed)
	}
	switch whence {
	case io.SeekCurrent:
		offset += f.pos
	case io.SeekEnd:
		offset += int64(f.n.data.size)
	}
	if offset < 0 {
		return 0, memErr("seek", f.name, syscall.EINVAL)
	}
	f.pos = offset
	return offset, nil
}

func (f *memFile) Truncate(size int64) error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if err := f.access("truncate", true); err != nil {
		return err
	}
	f.n.data.resize(int(size))
	return nil
}

func (f *memFile) Sync() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return memErr("sync", f.name, os.ErrClosed)
	}
	if f.fs.dropSyncs == nil || !f.fs.dropSyncs(f.name) {
		f.n.synced = f.n.data.clone()
	}
	return nil
}

func (f *memFile) Stat() (os.FileInfo, error) {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return nil, memErr("stat", f.name, os.ErrClosed)
	}
	return f.n.info(f.name), nil
}

func (f *memFile) Close() error {
	f.fs.mu.Lock()
	defer f.fs.mu.Unlock()
	if f.closed {
		return memErr("close", f.name, os.ErrClosed)
	}
	f.closed = true
	return nil
}

// TestMemFS checks memFS against a byte slice, and its crash semantics.
func TestMemFS(t *testing.T) {
	m := newMemFS()
	m.mkdirDurable("/d")
	f, err := m.OpenFile("/d/f", os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	var model []byte
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 3000 {
		if rng.IntN(4) == 0 {
			size := rng.IntN(3 * memPage)
			f.Truncate(int64(size))
			model = append(model[:min(size, len(model))], make([]byte, max(0, size-len(model)))...)
		} else {
			off, p := rng.IntN(3*memPage), make([]byte, rng.IntN(2*memPage))
			for j := range p {
				p[j] = byte(rng.IntN(255) + 1)
			}
			f.WriteAt(p, int64(off))
			if end := off + len(p); end > len(model) {
				model = append(model, make([]byte, end-len(model))...)
			}
			copy(model[off:], p)
		}
		got := make([]byte, len(model)+10)
		n, _ := f.ReadAt(got, 0)
		st, _ := f.Stat()
		if !bytes.Equal(got[:n], model) || st.Size() != int64(len(model)) {
			t.Fatalf("step %d: contents or size (%d) differ from the model (%d bytes)", i, st.Size(), len(model))
		}
	}

	read := func(fs *memFS, path string) string {
		b, ok := fs.readFile(path)
		if !ok {
			return "(absent)"
		}
		return string(b)
	}
	expect := func(what string, fs *memFS, path, want string) {
		t.Helper()
		if got := read(fs, path); got != want {
			t.Errorf("%s: %s holds %q, want %q", what, path, got, want)
		}
	}
	a, _ := m.OpenFile("/d/a", os.O_CREATE|os.O_WRONLY, 0o644)
	a.Write([]byte("x"))
	expect("kill, unsynced", m.crash(crashKill), "/d/a", "x")
	expect("power, unsynced", m.crash(crashPower), "/d/a", "(absent)")
	a.Sync()
	expect("power, synced but its name not", m.crash(crashPower), "/d/a", "(absent)")
	m.SyncDir("/d")
	a.Write([]byte("y"))
	expect("power, name synced", m.crash(crashPower), "/d/a", "x")
	expect("kill, name synced", m.crash(crashKill), "/d/a", "xy")
	a.Close()
	m.Rename("/d/a", "/d/b")
	expect("power, renamed", m.crash(crashPower), "/d/a", "x")
	expect("power, renamed", m.crash(crashPower), "/d/b", "(absent)")
	m.SyncDir("/d")
	expect("power, rename synced", m.crash(crashPower), "/d/a", "(absent)")
	expect("power, rename synced", m.crash(crashPower), "/d/b", "x")
	m.Remove("/d/b")
	expect("power, removed", m.crash(crashPower), "/d/b", "x")
	expect("kill, removed", m.crash(crashKill), "/d/b", "(absent)")
	m.MkdirAll("/d/new", 0o755)
	c, _ := m.OpenFile("/d/new/c", os.O_CREATE|os.O_WRONLY, 0o644)
	c.Write([]byte("z"))
	c.Sync()
	m.SyncDir("/d/new")
	expect("power, in a new directory", m.crash(crashPower), "/d/new/c", "(absent)")
	m.SyncDir("/d")
	expect("power, new directory synced", m.crash(crashPower), "/d/new/c", "z")

	entries, err := m.ReadDir("/d")
	var names []string
	for _, e := range entries {
		info, _ := e.Info()
		names = append(names, fmt.Sprintf("%s:%d:%v", e.Name(), info.Size(), e.IsDir()))
	}
	if want := fmt.Sprintf("[f:%d:false new:0:true]", len(model)); err != nil || fmt.Sprint(names) != want {
		t.Errorf("ReadDir = %v, %v; want %s", names, err, want)
	}
	if _, err := m.OpenFile("/d/missing", os.O_RDONLY, 0); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("opening a missing file: %v", err)
	}
	if _, err := m.OpenFile("/nodir/x", os.O_CREATE|os.O_WRONLY, 0o644); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("creating a file in a missing directory: %v", err)
	}
}
