package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestPersistBGSAVEPointInTime: BGSAVE keeps answering writes while it
// saves, and the file holds the data as it was when BGSAVE answered —
// not the pops, trims and pushes that came after (DESIGN principle 5).
func TestPersistBGSAVEPointInTime(t *testing.T) {
	t.Parallel()
	const (
		listLen   = 400_000
		perPush   = 1000
		streamLen = 50_000
		perBatch  = 1000
	)
	dir := t.TempDir()
	s := StartServerIn(t, dir, "--appendonly", "no", "--save", "")
	raw := s.Raw(t)

	// Fill a list and a stream, pipelined.
	var batch []byte
	for i := 0; i < listLen/perPush; i++ {
		args := []string{"RPUSH", "big"}
		for j := range perPush {
			args = append(args, fmt.Sprintf("value-%08d", i*perPush+j))
		}
		batch = append(batch, Encode(args...)...)
	}
	raw.Send(string(batch))
	for i := 0; i < listLen/perPush; i++ {
		if r := raw.Read(); r.Type != ':' {
			t.Fatalf("RPUSH: %s", r)
		}
	}
	for base := 0; base < streamLen; base += perBatch {
		batch = batch[:0]
		for i := base + 1; i <= base+perBatch; i++ {
			batch = append(batch, Encode("XADD", "log", fmt.Sprintf("%d-1", i), "n", strconv.Itoa(i))...)
		}
		raw.Send(string(batch))
		for range perBatch {
			if r := raw.Read(); r.Type != '$' {
				t.Fatalf("XADD: %s", r)
			}
		}
	}

	if r := raw.Do("BGSAVE"); r.Str != "Background saving started" {
		t.Fatalf("BGSAVE = %s", r)
	}
	// Change everything the save is reading while it reads it. A write
	// answered while INFO still says the save runs was served during it.
	servedDuring := 0
	for i := 1; ; i++ {
		for _, cmd := range [][]string{
			{"LPOP", "big", "100"},
			{"RPUSH", "big", "late"},
			{"XTRIM", "log", "MINID", fmt.Sprintf("%d", i*100)},
			{"XADD", "log", "*", "late", "1"},
			{"SET", "after", strconv.Itoa(i)},
		} {
			if r := raw.Do(cmd...); r.Type == '-' {
				t.Fatalf("%v during BGSAVE: %s", cmd, r)
			}
		}
		if infoField(t, raw, "persistence", "rdb_bgsave_in_progress") == "0" {
			break
		}
		servedDuring++
	}
	if servedDuring == 0 {
		t.Fatal("no write was answered while BGSAVE ran: the save stopped the world")
	}
	if got := infoField(t, raw, "persistence", "rdb_last_bgsave_status"); got != "ok" {
		t.Fatalf("rdb_last_bgsave_status = %s", got)
	}
	t.Logf("%d rounds of writes answered during BGSAVE", servedDuring)
	s.Stop()

	// The saved file is the data at BGSAVE, whole.
	r := StartServerIn(t, dir, "--appendonly", "no", "--save", "").Raw(t)
	for _, c := range []struct {
		cmd  []string
		want string
	}{
		{[]string{"LLEN", "big"}, fmt.Sprintf(":%d", listLen)},
		{[]string{"LINDEX", "big", "0"}, `$"value-00000000"`},
		{[]string{"LINDEX", "big", "-1"}, fmt.Sprintf(`$"value-%08d"`, listLen-1)},
		{[]string{"XLEN", "log"}, fmt.Sprintf(":%d", streamLen)},
		{[]string{"XRANGE", "log", "-", "+", "COUNT", "1"}, `*1[*2[$"1-1" *2[$"n" $"1"]]]`},
		{[]string{"XREVRANGE", "log", "+", "-", "COUNT", "1"},
			fmt.Sprintf(`*1[*2[$"%d-1" *2[$"n" $"%d"]]]`, streamLen, streamLen)},
		{[]string{"EXISTS", "after"}, ":0"},
	} {
		if got := r.Do(c.cmd...).String(); got != c.want {
			t.Errorf("after reload: %v = %s, want %s", c.cmd, got, c.want)
		}
	}
}

// TestPersistStaleSaveTemps: the half-written file of a save whose server
// died is removed at startup; one whose process still runs is kept.
func TestPersistStaleSaveTemps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(dir, fmt.Sprintf("dump.rdb.temp-%d.rdb", dead.Process.Pid))
	live := filepath.Join(dir, fmt.Sprintf("dump.rdb.temp-%d.rdb", os.Getpid()))
	for _, p := range []string{stale, live} {
		if err := os.WriteFile(p, []byte("REDIS0010 half written"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	StartServerIn(t, dir).Raw(t).Do("PING")
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("%s is still there (%v): a dead server's save was not cleaned up", stale, err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("%s was removed although its process runs: %v", live, err)
	}
}

// TestPersistBGSAVEEndsWithItsChanges: the moment INFO stops showing a
// background save, rdb_changes_since_last_save no longer counts what it
// saved — as Redis's parent reaps its child and resets dirty in one step.
// A second client keeps the event loop busy with reads, so a save that
// ends between the two (the bug) shows within a few rounds.
func TestPersistBGSAVEEndsWithItsChanges(t *testing.T) {
	t.Parallel()
	s := StartServerIn(t, t.TempDir(), "--appendonly", "no", "--save", "")
	raw, busy := s.Raw(t), s.Raw(t)
	var fill []string
	for i := range 2000 {
		fill = append(fill, strconv.Itoa(i))
	}
	if r := raw.Do(append([]string{"RPUSH", "reads"}, fill...)...); r.Int != 2000 {
		t.Fatalf("RPUSH = %s", r)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { // reads only: they change nothing a save counts
		defer close(done)
		reads := strings.Repeat(Encode("LRANGE", "reads", "0", "-1"), 8)
		for {
			select {
			case <-stop:
				return
			default:
			}
			busy.Send(reads)
			for range 8 {
				busy.Read()
			}
		}
	}()
	defer func() { close(stop); <-done }()

	for round := range 40 {
		for i := range 5 {
			if r := raw.Do("SET", "k"+strconv.Itoa(i), strconv.Itoa(round)); r.Str != "OK" {
				t.Fatalf("SET = %s", r)
			}
		}
		if r := raw.Do("BGSAVE"); r.Str != "Background saving started" {
			t.Fatalf("round %d: BGSAVE = %s", round, r)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			info := raw.Do("INFO", "persistence").Str // one reply: both fields from one instant
			if strings.Contains(info, "rdb_bgsave_in_progress:0\r\n") {
				if !strings.Contains(info, "rdb_changes_since_last_save:0\r\n") {
					t.Fatalf("round %d: the save is over but its changes still count:\n%s", round, info)
				}
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("round %d: the save never ended", round)
			}
		}
	}
}
