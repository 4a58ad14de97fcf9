package db

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/lshdb/lshdb/codec"
)

// crashImage copies the files of the open index in dir (but its lock) to a
// new directory: what a crash of the process holding it leaves, as every
// write was synced to its files before it returned.
func crashImage(t *testing.T, dir string) string {
	t.Helper()
	img := filepath.Join(t.TempDir(), "image")
	if err := os.Mkdir(img, 0o755); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range names {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(img, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return img
}

// newestLog returns the path of the newest write-ahead log in dir.
func newestLog(t *testing.T, dir string) string {
	t.Helper()
	logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
	var newest string
	for _, p := range logs {
		if b := filepath.Base(p); !strings.HasPrefix(b, "lshdb-") && (newest == "" || b > filepath.Base(newest)) {
			newest = p
		}
	}
	if newest == "" {
		t.Fatal("no write-ahead log")
	}
	return newest
}

// logDamageFixture writes three synced batches of perBatch documents
// through an open index, each into the same write-ahead log and over a
// 32 KiB block of it, and returns a crash image of it, the ids of each
// batch, and where each batch begins and ends in the newest log.
func logDamageFixture(t *testing.T) (img string, batches [][]string, starts, ends []int64) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	var logName string
	opened := newestLog(t, dir)
	fi, err := os.Stat(opened)
	if err != nil {
		t.Fatal(err)
	}
	for b := range 3 {
		switch {
		case b > 0:
			starts = append(starts, ends[b-1])
		case opened == newestLog(t, dir):
			starts = append(starts, fi.Size()) // after what Open wrote
		default:
			starts = append(starts, 0) // NB: this batch's log begins with it (set below)
		}
		docs, ids := batchDocs(b)
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		log := newestLog(t, dir)
		if logName != "" && log != logName {
			t.Fatalf("batch %d went to a new log, %s after %s", b, log, logName)
		}
		if b == 0 && log != opened {
			starts[0] = 0
		}
		logName = log
		fi, err := os.Stat(log)
		if err != nil {
			t.Fatal(err)
		}
		batches = append(batches, ids)
		ends = append(ends, fi.Size())
	}
	if ends[0]-starts[0] < logBlockSize || ends[1]-ends[0] < logBlockSize || ends[2]-ends[1] < logBlockSize {
		t.Fatalf("log sizes %v: want batches of several blocks", ends)
	}
	img = crashImage(t, dir)
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	return img, batches, starts, ends
}

// batchDocs returns the perBatch documents of batch b, and their ids.
func batchDocs(b int) ([]Doc, []string) {
	docs := make([]Doc, perBatch)
	ids := make([]string, perBatch)
	for i := range docs {
		ids[i] = fmt.Sprintf("b%d-%d", b, i)
		docs[i] = Doc{ID: ids[i], Text: fmt.Sprintf("document %d of batch %d: a text long enough to make shingles of, %d", i, b, i*7919)}
	}
	return docs, ids
}

// NB: Pebble's first memtables are small (256 KiB, then doubling), and
// it starts a new log with each memtable: the three batches fit in the
// first, each of them over a 32 KiB block of the log.
const perBatch = 120

// present returns how many of each batch's ids d has.
func present(t *testing.T, d *DB, batches [][]string) []int {
	t.Helper()
	var n []int
	for _, ids := range batches {
		has, err := d.HasIDs(ids)
		if err != nil {
			t.Fatal(err)
		}
		c := 0
		for _, ok := range has {
			if ok {
				c++
			}
		}
		n = append(n, c)
	}
	return n
}

// overwrite writes b at off in the file at path.
func overwrite(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// Ensure that damage in the middle of the newest write-ahead log is
// refused at Open (a *LogDamageError, ErrCorrupt) instead of dropping
// the damaged batch and every later one with no error, as Pebble's
// recovery does; that Options.AcceptLogDamage opens it with exactly that
// loss and keeps the log's bytes; and that what a crash leaves (a log cut
// short, or zeros where the writes did not reach) is no damage. The
// oracle: the batches each acknowledged before the crash image was
// taken, and the log's sizes between them.
func TestLogDamageMidLog(t *testing.T) {
	img, batches, _, ends := logDamageFixture(t)
	imgs := map[string]string{}
	for _, name := range []string{"intact", "damaged", "accepted", "cut", "zeroed", "newer", "again"} {
		imgs[name] = crashImage(t, img)
	}
	t.Run("intact", func(t *testing.T) {
		d := mustOpen(t, imgs["intact"], &Options{MustExist: true})
		defer d.Close()
		if got := present(t, d, batches); got[0] != perBatch || got[1] != perBatch || got[2] != perBatch {
			t.Fatalf("documents of each batch present: %v, want %d each", got, perBatch)
		}
		if d.LogDamage() != nil {
			t.Fatalf("damage found in an intact log: %v", d.LogDamage())
		}
	})

	// Damage 4 bytes in the middle of the second batch.
	mid := (ends[0] + ends[1]) / 2
	for _, name := range []string{"damaged", "accepted", "newer", "again"} {
		overwrite(t, newestLog(t, imgs[name]), mid, []byte{0xde, 0xad, 0xbe, 0xef})
	}

	// The log of a store this build does not open (a newer format) is
	// neither read as damaged nor cut: Pebble refuses the store.
	t.Run("newer format", func(t *testing.T) {
		markers, _ := filepath.Glob(filepath.Join(imgs["newer"], "marker.format-version.*"))
		if len(markers) != 1 {
			t.Fatalf("format markers %v", markers)
		}
		i := strings.LastIndexByte(markers[0], '.')
		if err := os.Rename(markers[0], markers[0][:i]+".999"); err != nil {
			t.Fatal(err)
		}
		before, _ := os.ReadFile(newestLog(t, imgs["newer"]))
		_, err := Open(imgs["newer"], &Options{MustExist: true, AcceptLogDamage: true})
		if err == nil || errors.As(err, new(*LogDamageError)) {
			t.Errorf("Open of a newer format: %v, want Pebble's refusal", err)
		}
		after, _ := os.ReadFile(newestLog(t, imgs["newer"]))
		if kept, _ := filepath.Glob(filepath.Join(imgs["newer"], damagedLogPrefix+"*")); len(kept) > 0 || !bytes.Equal(before, after) {
			t.Errorf("the log of a newer format was cut (copies %v)", kept)
		}
	})

	// A copy kept before (of an index restored from a backup, whose logs
	// reach the same numbers again) is not overwritten; the temporary
	// file of a cut that a crash interrupted is removed.
	t.Run("kept again", func(t *testing.T) {
		log := newestLog(t, imgs["again"])
		first := filepath.Join(imgs["again"], damagedLogPrefix+strings.TrimSuffix(filepath.Base(log), ".log"))
		if err := os.WriteFile(first+".log", []byte("an earlier copy"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(first+".log.tmp", []byte("a cut a crash interrupted"), 0o644); err != nil {
			t.Fatal(err)
		}
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		d := mustOpen(t, imgs["again"], &Options{MustExist: true, AcceptLogDamage: true, Logger: quiet})
		dmg := d.LogDamage()
		d.Close()
		if b, _ := os.ReadFile(first + ".log"); string(b) != "an earlier copy" || dmg == nil || dmg.Kept != first+"-2.log" {
			t.Errorf("the earlier copy holds %q; the damage %+v, want it kept as %s", b, dmg, first+"-2.log")
		}
		if _, err := os.Stat(first + ".log.tmp"); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the interrupted cut's temporary file: %v, want it removed", err)
		}
	})
	t.Run("refused", func(t *testing.T) {
		for _, o := range []*Options{{MustExist: true}, {ReadOnly: true}} {
			_, err := Open(imgs["damaged"], o)
			var dmg *LogDamageError
			if !errors.Is(err, ErrCorrupt) || !errors.As(err, &dmg) {
				t.Fatalf("Open (read-only %v) of a log damaged mid-way: %v, want a *LogDamageError (ErrCorrupt)", o.ReadOnly, err)
			}
			// NB: the damaged chunk begins at or before the damage, within
			// the second batch; the third batch is one record after it.
			if dmg.Offset < ends[0] || dmg.Offset > mid || dmg.Records != 1 || dmg.End != ends[2] {
				t.Errorf("damage at %d, %d records after it, to %d: want in [%d, %d], 1 record, to %d", dmg.Offset, dmg.Records, dmg.End, ends[0], mid, ends[2])
			}
			if !strings.Contains(err.Error(), "lshdb check --repair") {
				t.Errorf("the error names no way on: %v", err)
			}
		}
	})

	// A read-only open accepts it with nothing changed on disk: Pebble's
	// recovery drops the damaged batch and the one after it in memory
	// (or, when its own read-ahead confirms the damage, fails the open).
	t.Run("accepted read-only", func(t *testing.T) {
		quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
		d, err := Open(imgs["damaged"], &Options{ReadOnly: true, AcceptLogDamage: true, Logger: quiet})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read-only accepting open: %v, want it open or ErrCorrupt", err)
			}
			return
		}
		if got := present(t, d, batches); got[0] != perBatch || got[1] != 0 || got[2] != 0 || d.LogDamage() == nil || d.LogDamage().Kept != "" {
			t.Errorf("documents of each batch present: %v, damage %+v; want %d, 0, 0, and no copy kept", got, d.LogDamage(), perBatch)
		}
		d.Close()
		if _, err := Open(imgs["damaged"], &Options{ReadOnly: true}); !errors.As(err, new(*LogDamageError)) {
			t.Errorf("after a read-only accepting open, an open: %v, want the damage still refused", err)
		}
	})

	t.Run("accepted", func(t *testing.T) {
		log := newestLog(t, imgs["accepted"])
		damaged, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		var logs bytes.Buffer
		d := mustOpen(t, imgs["accepted"], &Options{MustExist: true, AcceptLogDamage: true, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
		dmg := d.LogDamage()
		if dmg == nil || dmg.Records != 1 || dmg.Kept == "" {
			t.Fatalf("LogDamage: %+v, want the damage accepted, 1 record after it, and the log kept", dmg)
		}
		if got := present(t, d, batches); got[0] != perBatch || got[1] != 0 || got[2] != 0 {
			t.Errorf("documents of each batch present: %v, want %d, 0, 0 (the damaged batch and the one after it dropped)", got, perBatch)
		}
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if kept, err := os.ReadFile(dmg.Kept); err != nil || !bytes.Equal(kept, damaged) {
			t.Errorf("the kept copy of the log (%v) differs from the damaged log", err)
		}
		if !strings.Contains(logs.String(), "damaged") {
			t.Errorf("no warning logged: %q", logs.String())
		}
		// The loss accepted, the index opens as any other.
		d = mustOpen(t, imgs["accepted"], &Options{MustExist: true})
		defer d.Close()
		if got := present(t, d, batches); got[0] != perBatch || got[1] != 0 || got[2] != 0 {
			t.Errorf("after reopening, documents of each batch present: %v, want %d, 0, 0", got, perBatch)
		}
		if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
			t.Errorf("check after the accepted loss: %v %v", err, rep.Problems)
		}
	})

	// What a crash leaves is no damage: the log cut in the middle of the
	// last batch, or zeros from there on (where writes did not reach).
	t.Run("torn", func(t *testing.T) {
		cut := (ends[1] + ends[2]) / 2
		if err := os.Truncate(newestLog(t, imgs["cut"]), cut); err != nil {
			t.Fatal(err)
		}
		overwrite(t, newestLog(t, imgs["zeroed"]), cut, make([]byte, ends[2]-cut))
		for _, name := range []string{"cut", "zeroed"} {
			d := mustOpen(t, imgs[name], &Options{MustExist: true})
			if got := present(t, d, batches); got[0] != perBatch || got[1] != perBatch || got[2] != 0 {
				t.Errorf("%s: documents of each batch present: %v, want %d, %d, 0", name, got, perBatch, perBatch)
			}
			if d.LogDamage() != nil {
				t.Errorf("%s: a torn tail read as damage: %v", name, d.LogDamage())
			}
			d.Close()
		}
	})
}

// Ensure that damage anywhere in the newest write-ahead log either is
// refused at Open, and accepted with the loss of exactly the damaged batch
// and those after it, or (in the last record, which reads as a torn tail,
// what a power failure may leave of an unsynced last batch) drops that
// record alone. The oracle: where each
// batch lies in the log, and the chunk layout of Pebble's format (a chunk
// ends at the latest with its 32 KiB block).
func TestLogDamageAnywhere(t *testing.T) {
	img, batches, starts, ends := logDamageFixture(t)
	// The image undamaged: every batch, and no warning.
	var logged bytes.Buffer
	d := mustOpen(t, crashImage(t, img), &Options{MustExist: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if got := present(t, d, batches); !slices.Equal(got, []int{perBatch, perBatch, perBatch}) {
		t.Errorf("undamaged: documents of each batch present: %v", got)
	}
	d.Close()
	if strings.Contains(logged.String(), "write-ahead log") {
		t.Errorf("undamaged: the open logged %q", logged.String())
	}
	rng := rand.New(rand.NewPCG(7, 11))
	trials := 24
	if testing.Short() {
		trials = 8
	}
	for trial := range trials {
		k := trial % 3
		var p int64
		for {
			p = starts[k] + rng.Int64N(ends[k]-starts[k]-4)
			// NB: not in a block's last bytes, which may be padding.
			if p%logBlockSize < logBlockSize-24 {
				break
			}
		}
		n := 1 + rng.IntN(4)
		t.Run(fmt.Sprintf("batch%d@%d", k, p), func(t *testing.T) {
			dir := crashImage(t, img)
			log := newestLog(t, dir)
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			dmg := make([]byte, n)
			for i := range dmg {
				dmg[i] = b[p+int64(i)] ^ byte(1+rng.IntN(255))
			}
			overwrite(t, log, p, dmg)
			want := []int{perBatch, perBatch, perBatch}
			for i := k; i < 3; i++ {
				want[i] = 0
			}
			quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
			var warned bytes.Buffer
			d, err := Open(dir, &Options{MustExist: true, Logger: slog.New(slog.NewTextHandler(&warned, nil))})
			if k == 2 {
				if err != nil {
					t.Fatalf("damage in the last record: %v, want the torn tail's open", err)
				}
				// NB: dropped with a warning wherever the damage is,
				// in the record's last block too (DR1).
				if w := warned.String(); !strings.Contains(w, "level=WARN") || !strings.Contains(w, "does not read whole") || !strings.Contains(w, filepath.Base(log)) {
					t.Errorf("damage in the last record: the open logged %q, want a warning naming %s", w, filepath.Base(log))
				}
				if got := present(t, d, batches); !slices.Equal(got, want) {
					t.Errorf("documents of each batch present: %v, want %v", got, want)
				}
				d.Close()
				return
			}
			var le *LogDamageError
			if !errors.As(err, &le) {
				if err == nil {
					d.Close()
				}
				t.Fatalf("Open: %v, want a *LogDamageError", err)
			}
			if le.Offset < starts[k] || le.Offset > p || le.Records != 2-k || le.End != ends[2] {
				t.Errorf("damage at %d, %d records after it, to %d: want in [%d, %d], %d records, to %d", le.Offset, le.Records, le.End, starts[k], p, 2-k, ends[2])
			}
			d = mustOpen(t, dir, &Options{MustExist: true, AcceptLogDamage: true, Logger: quiet})
			defer d.Close()
			if got := present(t, d, batches); !slices.Equal(got, want) {
				t.Errorf("accepted: documents of each batch present: %v, want %v", got, want)
			}
		})
	}
}

// FuzzLogScan checks that the scan of a write-ahead log or a MANIFEST takes any bytes
// without panicking, and that what it reports lies within them: the
// damage before the end of the last whole chunk after it, which is
// within the file, and the cut at or before the damage. For a WAL of
// number 5, Pebble's own reader is the oracle: damage it is sure of
// (record.ErrInvalidChunk, ErrZeroedChunk) the scan finds too, and the
// log cut where the scan says reads whole to a clean end (io.EOF, not a
// torn tail), with exactly the records Pebble's reader reads of the whole (a fuzz campaign's
// weak oracle: the scan was compared with nothing).
func FuzzLogScan(f *testing.F) {
	f.Add([]byte{}, uint32(5), false)
	f.Add(make([]byte, 40), uint32(5), false)
	// NB: a block and a part (35 KB), no more: seeds of 100 KB grew into
	// inputs of 600 KB, and the fuzzer spent its minutes shrinking them
	// (40 runs a second; a fuzz campaign's F5).
	f.Add(bytes.Repeat([]byte{9, 5, 0, 0, 0}, 7000), uint32(5), false)
	f.Add(bytes.Repeat([]byte{9, 5, 0, 0, 0, 1}, 6000), uint32(0), true)
	// Logs that Pebble's writer made: random bytes cannot pass a chunk's
	// checksum, so damage to real chunks comes from these. One within a
	// block, one across two (a record in chunks, a block's padding), and
	// one cut short.
	small := smallPebbleLog(f, 7, 40)
	f.Add(small, uint32(5), false)
	two := smallPebbleLog(f, 22, 3000)
	if two[logBlockSize+6] != chunkWALSyncFull+3 {
		f.Fatalf("the second block begins with a chunk of type %d, not a record's last", two[logBlockSize+6])
	}
	f.Add(two, uint32(5), false)
	f.Add(two[:len(two)*2/3], uint32(5), false)
	// Damage to the second block's first chunk, the last of a record
	// begun in the first: the cut is at that record's start.
	torn := bytes.Clone(two)
	torn[logBlockSize+walSyncChunkHdr+5] ^= 1
	f.Add(torn, uint32(5), false)
	f.Fuzz(func(t *testing.T, b []byte, num uint32, legacy bool) {
		// NB: legacy: a MANIFEST's scan (acceptManifestDamage).
		s := logScan{num: num, end: -1, legacy: legacy}
		for off := 0; off < len(b); off += logBlockSize {
			s.block(int64(off), b[off:min(off+logBlockSize, len(b))])
		}
		if s.chunks > 0 && (s.end < 0 || s.last <= s.end || s.last > int64(len(b)) || s.records > s.chunks) {
			t.Fatalf("end %d, %d chunks (%d records) to %d, in %d bytes", s.end, s.chunks, s.records, s.last, len(b))
		}
		// The cut that a strict reader reads whole is at or before the
		// damage, within the bytes.
		if s.end >= 0 && (s.cut < 0 || s.cut > s.end) {
			t.Fatalf("end %d, cut at %d", s.end, s.cut)
		}
		if num != 5 || legacy {
			return
		}
		whole, werr := pebbleRecords(b, 5)
		if s.end < 0 {
			if errors.Is(werr, record.ErrInvalidChunk) || errors.Is(werr, record.ErrZeroedChunk) {
				t.Fatalf("Pebble's reader: %d records, then %v; the scan: no damage", whole, werr)
			}
			return
		}
		n, err := pebbleRecords(b[:s.cut], 5)
		if err != io.EOF {
			t.Fatalf("damage at %d, cut at %d: Pebble's reader read %d records of the cut log, then %v", s.end, s.cut, n, err)
		}
		if n != whole {
			t.Fatalf("damage at %d, cut at %d: Pebble's reader read %d records of the cut log, %d of the whole (%v)", s.end, s.cut, n, whole, werr)
		}
	})
}

// smallPebbleLog is a WAL of number 5 that Pebble's writer made, closed
// cleanly: nrec records of random bytes, each of 1 to max bytes.
func smallPebbleLog(tb testing.TB, nrec, max int) []byte {
	rng := rand.New(rand.NewPCG(uint64(nrec), uint64(max)))
	w := &memLog{}
	writeLog(tb, record.NewLogWriter(w, 5, walSyncConfig()), rng, nrec, func() int { return 1 + rng.IntN(max) })
	return bytes.Clone(w.Bytes())
}

// walSyncConfig is the config of a LogWriter that writes the WAL sync
// format, Pebble's.
func walSyncConfig() record.LogWriterConfig {
	return record.LogWriterConfig{WriteWALSyncOffsets: func() bool { return true }}
}

// writeLog writes nrec records of random bytes from rng with lw, each of
// size() bytes, and closes it.
func writeLog(tb testing.TB, lw *record.LogWriter, rng *rand.Rand, nrec int, size func() int) {
	for range nrec {
		p := make([]byte, size())
		for j := range p {
			p[j] = byte(rng.IntN(256))
		}
		if _, err := lw.SyncRecord(p, nil, nil); err != nil {
			tb.Fatal(err)
		}
	}
	if err := lw.Close(); err != nil {
		tb.Fatal(err)
	}
}

// memLog is a log file in memory, for Pebble's LogWriter.
type memLog struct{ bytes.Buffer }

func (m *memLog) Sync() error  { return nil }
func (m *memLog) Close() error { return nil }

// pebbleLog writes nrec records of random sizes (a third up to 100 KB,
// the rest up to 300 bytes) with Pebble's own LogWriter, in the WAL sync
// format, as log num, closed cleanly (it ends with the EOF trailer). It
// returns the log, and where each chunk and each record's first chunk
// begins, from a walk of the clean log's layout.
func pebbleLog(t *testing.T, rng *rand.Rand, num uint32, nrec int) (b []byte, chunkStarts, recordStarts []int64) {
	w := &memLog{}
	// NB: the log's number is of an internal Pebble type: constants only.
	var lw *record.LogWriter
	switch num {
	case 5:
		lw = record.NewLogWriter(w, 5, walSyncConfig())
	case 2:
		lw = record.NewLogWriter(w, 2, walSyncConfig())
	default:
		t.Fatalf("log %d: 5 or 2", num)
	}
	writeLog(t, lw, rng, nrec, func() int {
		if rng.IntN(3) == 0 {
			return 1 + rng.IntN(100000)
		}
		return 1 + rng.IntN(300)
	})
	b = bytes.Clone(w.Bytes())
	// NB: a clean log's layout: a block's last bytes are padding when no
	// header fits in them.
	for off := 0; off < len(b); {
		blk := off / logBlockSize
		rem := (blk+1)*logBlockSize - off
		if rem < walSyncChunkHdr {
			off += rem
			continue
		}
		typ := b[off+6]
		if typ == chunkRecycleFull && binary.LittleEndian.Uint32(b[off+7:]) == num+1 {
			break // EOF trailer
		}
		chunkStarts = append(chunkStarts, int64(off))
		if typ == chunkWALSyncFull || typ == chunkWALSyncFull+1 {
			recordStarts = append(recordStarts, int64(off))
		}
		off += walSyncChunkHdr + int(binary.LittleEndian.Uint16(b[off+4:]))
	}
	return b, chunkStarts, recordStarts
}

// pebbleRecords is how many records Pebble's reader reads of log b.
func pebbleRecords(b []byte, num uint32) (int, error) {
	if num != 5 {
		return 0, fmt.Errorf("log %d: 5 only", num)
	}
	r := record.NewReader(bytes.NewReader(b), 5)
	n := 0
	for {
		rr, err := r.Next()
		if err != nil {
			return n, err
		}
		if _, err := io.Copy(io.Discard, rr); err != nil {
			return n, err
		}
		n++
	}
}

// scanBytes scans log b as newestLogDamage scans a file.
func scanBytes(b []byte, num uint32) logScan {
	return scanBlocks(logScan{num: num, end: -1}, b)
}

// scanBlocks runs s over b block by block, as a scan of a file does.
func scanBlocks(s logScan, b []byte) logScan {
	for off := 0; off < len(b); off += logBlockSize {
		s.block(int64(off), b[off:min(off+logBlockSize, len(b))])
	}
	return s
}

// Ensure that the scan agrees with the layout of logs that Pebble's own
// writer makes: no log closed cleanly in a recycled file (an older log's
// bytes after its EOF trailer), cut short by a crash, or followed by zeros
// or an older log's bytes reads as damaged; and random damage to 1-4
// bytes inside a chunk is refused exactly when a record begins after it
// (damage to the last record reads as a torn tail). The oracle: the
// chunks' and records' offsets from a walk of the clean log, and
// Pebble's reader for the clean one. (A maintainer's review wrote it.)
func TestLogScanAgainstPebbleWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	iters := 40
	if testing.Short() {
		iters = 10
	}
	for iter := 0; iter < iters; iter++ {
		const nrec = 60
		cur, starts, recStarts := pebbleLog(t, rng, 5, nrec)
		old, _, _ := pebbleLog(t, rng, 2, nrec*2)
		trailerAt := len(cur) // where the EOF trailer begins
		for i := len(cur) - 11; i >= 0; i-- {
			if cur[i+6] == chunkRecycleFull && binary.LittleEndian.Uint32(cur[i+7:]) == 6 && binary.LittleEndian.Uint32(cur[i:]) == 0 {
				trailerAt = i
				break
			}
		}
		// A clean close in a recycled file.
		clean := append(bytes.Clone(cur), old[min(len(cur), len(old)):]...)
		if s := scanBytes(clean, 5); s.chunks != 0 {
			t.Fatalf("a clean log in a recycled file read as damaged: %+v", s)
		}
		if n, err := pebbleRecords(clean, 5); n != nrec {
			t.Fatalf("Pebble's reader read %d records (%v), want %d", n, err, nrec)
		}
		// Torn tails: cut, then nothing, zeros, or an older log's bytes.
		for range 30 {
			x := rng.IntN(trailerAt + 1)
			for _, tail := range [][]byte{nil, make([]byte, rng.IntN(100000)), old[min(x, len(old)):]} {
				b := append(bytes.Clone(cur[:x]), tail...)
				if s := scanBytes(b, 5); s.chunks != 0 {
					t.Fatalf("a log torn at %d (then %d bytes) read as damaged: %+v", x, len(tail), s)
				}
			}
		}
		// Damage to a log a crash left (no trailer) in a recycled file.
		torn := append(bytes.Clone(cur[:trailerAt]), old[min(trailerAt, len(old)):]...)
		lastRecord := recStarts[len(recStarts)-1]
		for range 60 {
			p := rng.IntN(trailerAt - 4)
			n := 1 + rng.IntN(4)
			b := bytes.Clone(torn)
			for j := range n {
				b[p+j] ^= byte(1 + rng.IntN(255))
			}
			inChunk := false
			for _, c := range starts {
				l := int64(walSyncChunkHdr) + int64(binary.LittleEndian.Uint16(cur[c+4:]))
				if int64(p) < c+l && int64(p+n) > c {
					inChunk = true
				}
			}
			if !inChunk {
				continue // NB: padding, which Pebble skips unread
			}
			want := int64(p+n) <= lastRecord
			if s := scanBytes(b, 5); (s.records > 0) != want {
				t.Errorf("damage at %d+%d (the last record at %d): %d records after the damage, want them %v", p, n, lastRecord, s.records, want)
			}
		}
	}
}

// Ensure that olderLogDamage names a write-ahead log older than the
// newest that is cut within a chunk, and where it stops reading (the
// start of that chunk), and nothing when every older log reads to its
// clean end, is cut on a record's end or within a header too short to
// read (both read as whole), or only the newest is cut (which Pebble
// reads as a torn tail). The oracle: the layout of logs written by
// Pebble's own LogWriter.
func TestOlderLogDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	fs := vfs.NewMem()
	older, chunks, records := pebbleLog(t, rng, 2, 40)
	newest, _, newestRecords := pebbleLog(t, rng, 5, 10)
	write := func(name string, b []byte) {
		t.Helper()
		f, err := fs.Create(name, vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		// NB: a copy: under -race Pebble's MemFS scrambles the buffer it was given.
		if _, err := f.Write(bytes.Clone(b)); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	write("000002.log", older)
	write("000005.log", newest)
	if name, off := olderLogDamage(fs, ""); name != "" {
		t.Fatalf("whole logs: %s at %d", name, off)
	}
	write("000005.log", newest[:newestRecords[5]+3])
	if name, off := olderLogDamage(fs, ""); name != "" {
		t.Fatalf("the newest log cut: %s at %d", name, off)
	}
	starts := append(slices.Clone(chunks), int64(len(older))-recycleChunkHdr) // and the EOF trailer's
	for _, cut := range []int64{records[20] + 5, records[39] + 1, records[39], records[10] + 12, int64(len(older)) - recycleChunkHdr, int64(len(older)) - 3} {
		write("000002.log", older[:cut])
		// NB: where it stops reading: the start of the chunk the cut
		// falls in; nothing if the cut is on a chunk's start, or leaves
		// too little of its header to read as one (read as whole).
		want, wantName := int64(0), ""
		for i, c := range starts {
			next := int64(len(older))
			if i+1 < len(starts) {
				next = starts[i+1]
			}
			if c < cut && cut < next && cut-c >= legacyChunkHdr {
				want, wantName = c, "000002.log"
			}
		}
		if name, off := olderLogDamage(fs, ""); name != wantName || off != want {
			t.Fatalf("the older log cut at %d: %q at %d, want %q at %d", cut, name, off, wantName, want)
		}
		// Where an open accepting the damage cuts it: the start of the
		// record the damaged chunk is in, which a strict reader reads
		// as the log's clean end.
		if wantName != "" {
			// NB: the EOF trailer's chunk follows a record's end.
			wantCut := want
			if want != int64(len(older))-recycleChunkHdr {
				for _, r := range records {
					if r <= want {
						wantCut = r
					}
				}
			}
			if sc := olderLogScan(fs, ""); sc == nil || sc.cut != wantCut {
				t.Fatalf("the older log cut at %d: the damaged record's start %+v, want %d", cut, sc, wantCut)
			}
		}
	}
	// NB: an empty older log reads as whole to Pebble, and so does one
	// cut on a record's end: the log cut within a chunk after it is the
	// one named.
	write("000001.log", nil)
	write("000002.log", older[:records[7]])
	if name, off := olderLogDamage(fs, ""); name != "" {
		t.Fatalf("an empty log, and one cut on a record's end: %q at %d", name, off)
	}
	write("000002.log", older[:records[7]+25])
	if name, off := olderLogDamage(fs, ""); name != "000002.log" || off != records[7] {
		t.Fatalf("an empty log, and one cut within a chunk: %q at %d, want 000002.log at %d", name, off, records[7])
	}
}

// Ensure that a store whose OPTIONS file does not parse opens: it holds
// Pebble's settings only, and it made the index unopenable with the
// advice to restore a backup (an operator's review, O2). A read-only open
// refuses it as Repairable damage, naming the file; a writable one sets
// it aside and goes on. The oracle: the documents stored before, counted
// and read back after, and the file kept aside byte for byte.
func TestDamagedOptionsFile(t *testing.T) {
	dir := t.TempDir()
	d := mustOpen(t, dir, nil)
	var docs []Doc
	for i := range 50 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("the text of document number %d, with some words", i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	opts, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*"))
	if len(opts) == 0 {
		t.Fatal("no OPTIONS file")
	}
	slices.Sort(opts)
	newest := opts[len(opts)-1]
	garbage := []byte("[Options]\n  this line is garbage\n")
	if err := os.WriteFile(newest, garbage, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, &Options{ReadOnly: true})
	if !errors.Is(err, ErrCorrupt) || !Repairable(err) || !strings.Contains(err.Error(), filepath.Base(newest)) {
		t.Fatalf("read-only open with a damaged OPTIONS file: %v, want a Repairable ErrCorrupt naming %s", err, filepath.Base(newest))
	}
	w := mustOpen(t, dir, nil)
	if n, err := w.Count(); err != nil || n != 50 {
		t.Fatalf("Count after setting the OPTIONS file aside: %d, %v", n, err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	kept, err := os.ReadFile(filepath.Join(dir, "lshdb-damaged-"+filepath.Base(newest)))
	if err != nil || !bytes.Equal(kept, garbage) {
		t.Fatalf("the damaged file set aside: %q, %v", kept, err)
	}
	// The store keeps an options file that parses (an input walk knows a
	// store by it), info lists the copy, and the copy is the index's own
	// file (drop took the directory for another's).
	if now, _ := filepath.Glob(filepath.Join(dir, "OPTIONS-*")); len(now) == 0 {
		t.Fatal("no OPTIONS file after the repair")
	}
	if got := damagedLogCopies(vfs.Default, dir); len(got) != 1 || filepath.Base(got[0]) != "lshdb-damaged-"+filepath.Base(newest) {
		t.Errorf("damaged copies listed: %q", got)
	}
	if !indexFile("lshdb-damaged-" + filepath.Base(newest)) {
		t.Errorf("the set-aside options file is not taken as the index's own")
	}
	r := mustOpen(t, dir, &Options{ReadOnly: true})
	defer r.Close()
	for _, doc := range docs {
		got, err := r.Get(doc.ID)
		if err != nil || got.Text != doc.Text {
			t.Fatalf("Get(%s) after the repair: %v %+v", doc.ID, err, got)
		}
	}
}

// Ensure that damage in a write-ahead log older than the newest, which
// Pebble replays only whole, is refused at Open as a *LogDamageError
// (Older, ErrCorrupt), where no command could open the index (an
// operator's review, DR3), and that Options.AcceptLogDamage opens it
// with exactly the loss of the damaged batch and those after it in that
// log: the batch before it and the newest log's are there, a copy of the
// log as it was is kept, and a repair then says that documents the
// counters counted went without a delete. The image: a crash while the
// flush of the older log's memtable could not finish (flushBlocker), so
// that both logs are replayed; the oracle: the batches acknowledged.
func TestOlderLogDamageAccepted(t *testing.T) {
	img, batches, logs := olderLogImage(t, 4)
	if len(logs) < 2 {
		t.Fatalf("logs %v: want the older log's flush held, and a newer log", logs)
	}
	older := img.PathJoin("db", logs[len(logs)-2])
	// Damage in the second batch (the first is at the log's start, after
	// what Open wrote: about 100 KiB in).
	f, err := img.OpenReadWrite(older, vfs.WriteCategoryUnspecified)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := f.Stat()
	at := st.Size() * 3 / 4
	if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, at); err != nil {
		t.Fatal(err)
	}
	f.Close()
	quiet := slog.New(slog.DiscardHandler)
	_, err = Open("db", &Options{fs: img, MustExist: true, Logger: quiet})
	var le *LogDamageError
	if !errors.As(err, &le) || !le.Older || !errors.Is(err, ErrCorrupt) || le.Log != older || le.Offset > at || le.Cut > le.Offset {
		t.Fatalf("Open: %v, want a *LogDamageError (Older) of %s before byte %d", err, older, at)
	}
	r := mustOpen(t, "db", &Options{fs: img, MustExist: true, AcceptLogDamage: true, Logger: quiet, ExpirySweep: -1, PurgeEvery: -1})
	defer r.Close()
	dmgs := r.OlderLogDamage()
	if len(dmgs) != 1 || dmgs[0].Log != older || dmgs[0].Kept == "" || dmgs[0].Cut != le.Cut {
		t.Fatalf("OlderLogDamage: %+v, want the damage accepted, %s cut at %d with a copy kept", dmgs, older, le.Cut)
	}
	dmg := dmgs[0]
	if fi, err := img.Stat(dmg.Kept); err != nil || fi.Size() != st.Size() {
		t.Fatalf("the copy kept: %v, %v; want %d bytes", fi, err, st.Size())
	}
	if got := present(t, r, batches); !slices.Equal(got, []int{4, 0, 4, 4}) {
		t.Fatalf("documents of each batch present: %v, want [4 0 4 4] (the damaged second batch dropped)", got)
	}
	rep, err := r.Repair(context.Background())
	if err != nil || !rep.Counters || rep.CountedDocs != 16 || rep.StoredDocs != 12 {
		t.Fatalf("repair: %+v, %v; want the counters counting 16 documents, 12 stored", rep, err)
	}
	if c, err := r.Check(context.Background()); err != nil || !c.OK() {
		t.Fatalf("check after the repair: %+v, %v", c, err)
	}
}

// olderLogImage writes n batches of four documents (100 KiB of metadata
// a batch) through an index whose memtable flushes cannot finish
// (flushBlocker), and returns a crash image of it, the ids of each batch,
// and its write-ahead logs, sorted: NB: Pebble's first memtable takes 256
// KiB and starts a new log with the next, so that 4 batches make two logs
// that a replay reads, 12 three.
func olderLogImage(t *testing.T, n int) (*vfs.MemFS, [][]string, []string) {
	t.Helper()
	base := vfs.NewCrashableMem()
	fs := &flushBlocker{FS: base, release: make(chan struct{})}
	d := mustOpen(t, "db", &Options{fs: fs, ExpirySweep: -1, PurgeEvery: -1})
	release := sync.OnceFunc(func() { close(fs.release) })
	defer func() { release(); d.Close() }()
	rng := rand.New(rand.NewPCG(5, 5))
	var batches [][]string
	for b := range n {
		var docs []Doc
		var ids []string
		for i := range 4 {
			meta := make([]byte, 25<<10)
			for j := range meta {
				meta[j] = byte(rng.IntN(256))
			}
			id := fmt.Sprintf("b%d-%d", b, i)
			docs = append(docs, Doc{ID: id, Text: fmt.Sprintf("document %d of batch %d of the older log test", i, b), Meta: meta})
			ids = append(ids, id)
		}
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		batches = append(batches, ids)
	}
	img := base.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	names, err := img.List("db")
	if err != nil {
		t.Fatal(err)
	}
	var logs []string
	for _, n := range names {
		if isLogFile(n) {
			logs = append(logs, n)
		}
	}
	slices.Sort(logs)
	return img, batches, logs
}

// Ensure that two damaged logs older than the newest are both cut by one
// open accepting the damage (a read-through's R3: the open tried again
// once, and its error said that no file was changed, though one log had
// been cut), and that an open that does not accept it names the first.
// The oracle: each batch is whole or gone, the newest log's are there,
// and a repair counts as gone without a delete exactly the documents
// missing.
func TestTwoOlderLogsDamaged(t *testing.T) {
	img, batches, logs := olderLogImage(t, 12)
	if len(logs) < 3 {
		t.Fatalf("logs %v: want two older logs held, and a newer one", logs)
	}
	for _, l := range logs[:2] {
		f, err := img.OpenReadWrite(img.PathJoin("db", l), vfs.WriteCategoryUnspecified)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := f.Stat()
		if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, st.Size()*3/4); err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	quiet := slog.New(slog.DiscardHandler)
	_, err := Open("db", &Options{fs: img, MustExist: true, Logger: quiet})
	var le *LogDamageError
	if !errors.As(err, &le) || !le.Older || le.Log != img.PathJoin("db", logs[0]) || len(le.CutBefore) != 0 || !strings.Contains(err.Error(), "No file was changed") {
		t.Fatalf("Open: %v, want the damage of %s, no file changed", err, logs[0])
	}
	r := mustOpen(t, "db", &Options{fs: img, MustExist: true, AcceptLogDamage: true, Logger: quiet, ExpirySweep: -1, PurgeEvery: -1})
	defer r.Close()
	dmgs := r.OlderLogDamage()
	if len(dmgs) != 2 || dmgs[0].Log != img.PathJoin("db", logs[0]) || dmgs[1].Log != img.PathJoin("db", logs[1]) {
		t.Fatalf("OlderLogDamage: %+v, want %s and %s cut", dmgs, logs[0], logs[1])
	}
	for _, d := range dmgs {
		if _, err := img.Stat(d.Kept); err != nil {
			t.Fatalf("the copy of %s: %v", d.Log, err)
		}
	}
	got := present(t, r, batches)
	missing := 0
	for b, n := range got {
		if n != 0 && n != 4 {
			t.Fatalf("batch %d: %d of 4 documents (%v): want each whole or gone", b, n, got)
		}
		missing += 4 - n
	}
	if missing == 0 || got[len(got)-1] != 4 {
		t.Fatalf("documents of each batch present: %v, want some gone and the newest log's there", got)
	}
	rep, err := r.Repair(context.Background())
	if err != nil || !rep.Counters || rep.CountedDocs-rep.StoredDocs != uint64(missing) {
		t.Fatalf("repair: %+v, %v; want %d documents counted and gone", rep, err, missing)
	}
}

// olderLogDamage names the log olderLogScan finds in dir, and where it
// stops reading ("" if none).
func olderLogDamage(fs vfs.FS, dir string) (name string, offset int64) {
	if s := olderLogScan(fs, dir); s != nil {
		return s.name, s.end
	}
	return "", 0
}

// Ensure that an open accepting the damage of its newest write-ahead log
// says what the dropped records held, as far as they read: the ids the
// whole batches after the damaged one put and deleted, in log order, and
// that the damaged one did not read; and that Repair on that handle
// reports the cut (it said "nothing to mend" and changed:false of 2,000
// acknowledged documents dropped: an operator's review, O2-1). The
// oracle: the batches written, in order: a put of 120, a put of 120
// (damaged), a delete of 10 of the first, a put of 120.
func TestLogCutSaysWhatItDropped(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	put := func(b int) []string {
		docs, ids := batchDocs(b)
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		return ids
	}
	size := func() int64 {
		fi, err := os.Stat(newestLog(t, dir))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	first := put(0)
	log := newestLog(t, dir)
	from := size()
	put(1)
	to := size()
	deleted := first[40:50]
	if _, err := d.DeleteIDs(deleted, nil); err != nil {
		t.Fatal(err)
	}
	last := put(2)
	if newestLog(t, dir) != log || to-from < logBlockSize {
		t.Fatalf("the batches went to %s after %s, the second over %d bytes: want one log, over a block", newestLog(t, dir), log, to-from)
	}
	img := crashImage(t, dir)
	d.Close()
	overwrite(t, filepath.Join(img, filepath.Base(log)), (from+to)/2, []byte{0xde, 0xad, 0xbe, 0xef})

	d = mustOpen(t, img, &Options{MustExist: true, AcceptLogDamage: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer d.Close()
	dmg := d.LogDamage()
	if dmg == nil || dmg.Records != 2 || !slices.Equal(dmg.Puts, last) || !slices.Equal(dmg.Deletes, deleted) || dmg.Unread != 1 {
		t.Fatalf("LogDamage %+v: want 2 whole records after the damage, which put %d ids (b2-…) and deleted %v, and 1 unread", dmg, len(last), deleted)
	}
	res, err := d.Repair(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := LogCut{Log: dmg.Log, Kept: dmg.Kept, Records: 3, Puts: last, Deletes: deleted, Unread: 1}
	if len(res.LogCuts) != 1 || !reflect.DeepEqual(res.LogCuts[0], want) || !res.Changed() {
		t.Fatalf("Repair's log cuts %+v (changed %v), want %+v and a change", res.LogCuts, res.Changed(), want)
	}
	// What it says dropped is what the index lacks: the first batch but
	// the deleted, the ids it puts, and none deleted back.
	has, err := d.HasIDs(append(append([]string{}, deleted...), last...))
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range has {
		if !h && i < len(deleted) || h && i >= len(deleted) {
			t.Fatalf("after the cut, %v present: want the deleted ones back (their delete dropped) and the last batch gone", has)
		}
	}
}

// Fuzz the decoder of a damaged log's dropped batches (batchEntries): it
// never panics, and a batch Pebble wrote reads whole with exactly the
// entries written (the oracle: the keys and kinds given to the batch).
func FuzzBatchEntries(f *testing.F) {
	d, err := Open("fuzz", &Options{fs: vfs.NewMem()})
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Add([]byte("a"), []byte("b"), []byte{})
	f.Add(codec.AppendIDKey(nil, "some id"), []byte("value"), []byte{0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, k1, v1, raw []byte) {
		batchEntries(raw, func(pebble.InternalKeyKind, []byte) {})
		b := d.pdb.NewBatch()
		defer b.Close()
		if err := b.Set(k1, v1, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Delete(v1, nil); err != nil {
			t.Fatal(err)
		}
		if err := b.Merge(k1, raw, nil); err != nil {
			t.Fatal(err)
		}
		type entry struct {
			kind pebble.InternalKeyKind
			key  string
		}
		var got []entry
		if !batchEntries(b.Repr(), func(kind pebble.InternalKeyKind, key []byte) { got = append(got, entry{kind, string(key)}) }) {
			t.Fatalf("a batch Pebble wrote did not read whole: %x", b.Repr())
		}
		want := []entry{{pebble.InternalKeyKindSet, string(k1)}, {pebble.InternalKeyKindDelete, string(v1)}, {pebble.InternalKeyKindMerge, string(k1)}}
		if !slices.Equal(got, want) {
			t.Fatalf("entries %v, want %v", got, want)
		}
		// Cut short anywhere, it reads as not whole (or whole up to an
		// entry's end), and never panics.
		r := b.Repr()
		for i := range len(r) {
			batchEntries(r[:i], func(pebble.InternalKeyKind, []byte) {})
		}
	})
}
