package persistence

import (
	"slices"
	"testing"
)

// Switching appendfsync to always at run time makes what was written
// under no durable at once (a power cut right after loses nothing), and
// every frame after the switch is acknowledged only once fsync'd.
func TestAOFSetFsyncToAlways(t *testing.T) {
	mem := newMemFS()
	mem.mkdirDurable(fDataDir)
	a := startTestAOF(t, mem, FsyncNo)
	defer a.Close()
	var want []int
	var last uint64
	for i := range 5 {
		last = a.Append(qrec(i))
		if err := a.Wait(last); err != nil {
			t.Fatal(err)
		}
		want = append(want, i)
	}
	// Fsynced (WAITAOF) agrees with what a power cut keeps.
	if a.Fsynced(last) || len(powerCutRecords(t, mem)) == len(want) {
		t.Fatalf("under no: Fsynced(%d) = %v, and a power cut keeps %v", last, a.Fsynced(last), powerCutRecords(t, mem))
	}
	if err := a.SetFsync(FsyncAlways); err != nil {
		t.Fatal(err)
	}
	if got := powerCutRecords(t, mem); !slices.Equal(got, want) || !a.Fsynced(last) {
		t.Fatalf("after switching to always, a power cut keeps %v, want %v; Fsynced(%d) = %v", got, want, last, a.Fsynced(last))
	}
	for i := 5; i < 8; i++ {
		if err := a.Wait(a.Append(qrec(i))); err != nil {
			t.Fatal(err)
		}
		want = append(want, i)
		if got := powerCutRecords(t, mem); !slices.Equal(got, want) {
			t.Fatalf("record %d acknowledged under always, but a power cut keeps %v", i, got)
		}
	}
	// And back: under everysec a reply no longer waits for an fsync.
	if err := a.SetFsync(FsyncEverysec); err != nil {
		t.Fatal(err)
	}
	if err := a.Wait(a.Append(qrec(8))); err != nil {
		t.Fatal(err)
	}
}

// powerCutRecords loads the records a power cut now would leave.
func powerCutRecords(t *testing.T, mem *memFS) []int {
	t.Helper()
	img := mem.crash(crashPower)
	a, err := OpenAOF(testAOFOptions(img, FsyncAlways, nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []int
	if _, err := a.Load(nil, applyTestRecord(&got)); err != nil {
		t.Fatal(err)
	}
	return got
}
