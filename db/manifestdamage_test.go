package db

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// manifestRecords returns the path of the current MANIFEST of the store
// in dir and where each of its records begins, as Pebble's own reader
// reads it (the last entry is the end of the last record).
func manifestRecords(t *testing.T, dir string) (string, []int64) {
	t.Helper()
	markers, _ := filepath.Glob(filepath.Join(dir, "marker.manifest.*"))
	if len(markers) != 1 {
		t.Fatalf("markers: %q", markers)
	}
	manifest := filepath.Join(dir, markers[0][strings.Index(markers[0], "MANIFEST-"):])
	f, err := os.Open(manifest)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	r := record.NewReader(f, 0)
	offsets := []int64{0}
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("reading %s: %v", manifest, err)
		}
		if _, err := io.Copy(io.Discard, rec); err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, r.Offset())
	}
	return manifest, offsets
}

// fileContents returns the contents of every file in dir, by name.
func fileContents(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string][]byte)
	for _, e := range names {
		if e.IsDir() || e.Name() == "LOCK" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out[e.Name()] = b
	}
	return out
}

// Ensure that a store whose MANIFEST is damaged before its last record
// is refused at every open (a *LogDamageError with Manifest set, which
// matches ErrCorrupt), naming where the damage is and how many records
// follow it, and that no file changes: Pebble reads such damage as a
// crash's torn end and opened the index as of the records before it,
// deleting the tables written since; where no later record had replaced
// a table listed before the damage, Open and Check said ok. An open
// that accepts the damage (Options.AcceptLogDamage) but cannot open the
// store as of the records before it, as here (a later compaction deleted
// a table that they list), puts the manifest back as it was. Damage to
// the last record alone reads as a torn tail: the open goes on, as
// Pebble's does. The oracle: the records' offsets from Pebble's own
// reader, the files' bytes before the opens, and the count of documents
// written.
func TestOpenRefusesManifestDamage(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	var loaded []Doc
	for i := range 300 {
		loaded = append(loaded, Doc{ID: fmt.Sprintf("l%d", i), Text: fmt.Sprintf("loaded document %d of an index whose manifest is damaged later", i)})
	}
	if _, err := d.Load(t.Context(), func(yield func(Doc, error) bool) {
		for _, x := range loaded {
			if !yield(x, nil) {
				return
			}
		}
	}, nil); err != nil {
		t.Fatal(err)
	}
	var docs []Doc
	for i := range 100 {
		docs = append(docs, Doc{ID: fmt.Sprintf("b%d", i), Text: fmt.Sprintf("document %d of a batch flushed to a table of its own", i)})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	const want = 400
	manifest, offsets := manifestRecords(t, dir)
	nrec := len(offsets) - 1
	if nrec < 4 {
		t.Fatalf("%s holds %d records: want several", manifest, nrec)
	}
	orig := fileContents(t, dir)
	accepted := 0
	for k := 0; k < nrec-1; k++ { // NB: record k (from 0), not the last
		img := filepath.Join(t.TempDir(), "img")
		if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
			t.Fatal(err)
		}
		// NB: a byte inside the record's payload (past its 7-byte
		// chunk header).
		m := filepath.Join(img, filepath.Base(manifest))
		b := bytes.Clone(orig[filepath.Base(manifest)])
		at := offsets[k] + 7 + (offsets[k+1]-offsets[k]-7)/2
		b[at] ^= 0x40
		if err := os.WriteFile(m, b, 0o644); err != nil {
			t.Fatal(err)
		}
		damaged := fileContents(t, img)
		for _, o := range []*Options{nil, {ReadOnly: true}, {MustExist: true}} {
			_, err := Open(img, o)
			var dmg *LogDamageError
			if !errors.As(err, &dmg) || !errors.Is(err, ErrCorrupt) || !dmg.Manifest {
				t.Fatalf("record %d damaged at byte %d: Open(%+v): %v, want a *LogDamageError of the manifest", k, at, o, err)
			} else if dmg.Offset != offsets[k] || dmg.Records != nrec-k-1 || dmg.End != offsets[nrec] || dmg.Log != m {
				t.Fatalf("record %d damaged: %+v, want the damage at %d, %d records after it, to %d, in %s", k, dmg, offsets[k], nrec-k-1, offsets[nrec], m)
			} else if !strings.Contains(err.Error(), "check --repair") || !strings.Contains(err.Error(), filepath.Base(manifest)) {
				t.Fatalf("record %d damaged: %v, saying not the manifest's name and what to do", k, err)
			}
			after := fileContents(t, img)
			for n, b := range damaged {
				// NB: a writable open of Pebble's writes its options
				// file anew (its settings, no document), refused or not.
				if !bytes.Equal(after[n], b) && !strings.HasPrefix(n, "OPTIONS-") {
					t.Fatalf("record %d damaged: Open(%+v) changed or removed %s", k, o, n)
				}
			}
		}
		// Accepting the loss: most records here are followed by one that
		// replaced a table they list (a compaction), so the index does
		// not open as of the records before the damage; the others are
		// followed only by records whose loss the index survives.
		copyPath := filepath.Join(img, damagedLogPrefix+filepath.Base(manifest))
		d, err := Open(img, &Options{AcceptLogDamage: true})
		if err != nil {
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "does not open as of its records before the damage") {
				t.Fatalf("record %d damaged: Open accepting the damage: %v, want ErrCorrupt saying it does not open before the damage", k, err)
			}
			after := fileContents(t, img)
			if len(after) != len(damaged) {
				t.Fatalf("record %d damaged: a refused accepting open left %d files, not %d", k, len(after), len(damaged))
			}
			for n, b := range damaged {
				if !bytes.Equal(after[n], b) {
					t.Fatalf("record %d damaged: a refused accepting open changed or removed %s", k, n)
				}
			}
			if _, err := Open(img, nil); !errors.As(err, new(*LogDamageError)) {
				t.Fatalf("record %d damaged: after a refused accepting open, Open: %v, want the damage found again", k, err)
			}
			continue
		}
		accepted++
		dmg := d.ManifestDamage()
		if dmg == nil || dmg.Kept != copyPath || dmg.Offset != offsets[k] || d.LogDamage() != nil {
			t.Fatalf("record %d damaged: the open accepted %+v (log damage %v), want the manifest's, copied to %s", k, dmg, d.LogDamage(), copyPath)
		}
		if kept, err := os.ReadFile(copyPath); err != nil || !bytes.Equal(kept, damaged[filepath.Base(manifest)]) {
			t.Fatalf("record %d damaged: the copy of the manifest is not the damaged manifest (%v)", k, err)
		}
		n, err := d.Count()
		if err != nil || n > want {
			t.Fatalf("record %d damaged: Count %d, %v; want at most %d", k, n, err, want)
		}
		if _, err := d.Repair(t.Context()); err != nil {
			t.Fatal(err)
		}
		if rep, err := d.Check(t.Context()); err != nil || !rep.OK() {
			t.Fatalf("record %d damaged: Check after the accepting open and a repair: %+v, %v", k, rep, err)
		}
		n, _ = d.Count()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		// NB: cut (or written anew): the next open finds no damage.
		d = mustOpen(t, img, nil)
		if m, err := d.Count(); err != nil || m != n {
			t.Fatalf("record %d damaged: reopened after accepting, Count %d, %v; want %d", k, m, err, n)
		}
		if info, err := d.Info(); err != nil || !slices.Contains(info.DamagedLogCopies, copyPath) {
			t.Fatalf("record %d damaged: Info lists not the manifest's copy %s: %+v, %v", k, copyPath, info, err)
		}
		d.Close()
	}
	t.Logf("%d of %d damaged records opened accepting the loss", accepted, nrec-1)
	// Damage after the last record, then a whole record (a copy of the
	// last): refused, and an accepting open loses nothing and cuts the
	// manifest at the damage (every document written is there).
	img := filepath.Join(t.TempDir(), "appended")
	if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	m := filepath.Join(img, filepath.Base(manifest))
	b := damagedThenWhole(orig[filepath.Base(manifest)], offsets)
	if err := os.WriteFile(m, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var dmg *LogDamageError
	if _, err := Open(img, nil); !errors.As(err, &dmg) || dmg.Offset != offsets[nrec] || dmg.Records != 1 {
		t.Fatalf("damage after the last record, then a whole record: %v, want the damage at %d with 1 record after it", err, offsets[nrec])
	}
	d = mustOpen(t, img, &Options{AcceptLogDamage: true})
	if dmg := d.ManifestDamage(); dmg == nil || dmg.Kept == "" {
		t.Fatalf("accepted %+v, want the manifest's damage with a copy kept", dmg)
	}
	if n, err := d.Count(); err != nil || n != want {
		t.Fatalf("Count after accepting damage that dropped no table: %d, %v; want %d", n, err, want)
	}
	if rep, err := d.Check(t.Context()); err != nil || !rep.OK() {
		t.Fatalf("Check after accepting damage that dropped no table: %+v, %v", rep, err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// NB: Pebble may have written a new manifest (and keeps the one
	// before it a while): the one the marker names is cut, or new.
	if cur, _ := manifestRecords(t, img); cur == m {
		if cut, err := os.ReadFile(m); err != nil || !bytes.Equal(cut, orig[filepath.Base(manifest)]) {
			t.Fatalf("the manifest after the accepting open: %d bytes (%v), want it cut at the damage (%d bytes) or written anew", len(cut), err, offsets[nrec])
		}
	}
	d = mustOpen(t, img, nil)
	if n, err := d.Count(); err != nil || n != want {
		t.Fatalf("Count reopened: %d, %v; want %d", n, err, want)
	}
	d.Close()
	// The last record damaged: a torn tail, as after a crash in its write.
	img = filepath.Join(t.TempDir(), "last")
	if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	b = bytes.Clone(orig[filepath.Base(manifest)])
	b[offsets[nrec-1]+7+(offsets[nrec]-offsets[nrec-1]-7)/2] ^= 0x40
	if err := os.WriteFile(filepath.Join(img, filepath.Base(manifest)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logged, nil))
	td, err := Open(img, &Options{ReadOnly: true, Logger: logger})
	if errors.As(err, new(*LogDamageError)) {
		t.Fatalf("the last record damaged: %v, want it read as a torn tail", err)
	}
	if err == nil {
		td.Close()
		if !strings.Contains(logged.String(), "as a torn write is") {
			t.Fatalf("a torn tail dropped, and nothing said: %q", logged.String())
		}
	}
	// A manifest cut inside its second record: a torn tail too, but the
	// store does not open as of its first record. The open's error alone
	// says so: a warning that the tail "was dropped" came first (an
	// adversarial review's A5).
	img = filepath.Join(t.TempDir(), "cut")
	if err := os.CopyFS(img, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	b = orig[filepath.Base(manifest)][:offsets[1]+9]
	if err := os.WriteFile(filepath.Join(img, filepath.Base(manifest)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	logged.Reset()
	if d, err := Open(img, &Options{ReadOnly: true, Logger: logger}); err == nil {
		d.Close()
		t.Fatal("an index whose manifest was cut after its first record opened")
	}
	if strings.Contains(logged.String(), "dropped") {
		t.Fatalf("an open that failed said the manifest's tail was dropped: %q", logged.String())
	}
	// And the sound index opens whole.
	d = mustOpen(t, dir, &Options{ReadOnly: true})
	if n, err := d.Count(); err != nil || n != want {
		t.Fatalf("Count of the sound index: %d, %v; want %d", n, err, want)
	}
	d.Close()
}

// pebbleManifest writes nrec records of random sizes (a third up to 100
// KB, the rest up to 300 bytes) with Pebble's own record.Writer, which
// writes the MANIFEST (legacy chunks, no log number), and returns the
// file, where each record begins and, last, where the file ends.
func pebbleManifest(t *testing.T, rng *rand.Rand, nrec int) ([]byte, []int64) {
	var buf bytes.Buffer
	w := record.NewWriter(&buf)
	var starts []int64
	for range nrec {
		n := 1 + rng.IntN(300)
		if rng.IntN(3) == 0 {
			n = 1 + rng.IntN(100000)
		}
		p := make([]byte, n)
		for j := range p {
			p[j] = byte(rng.IntN(256))
		}
		if _, err := w.WriteRecord(p); err != nil {
			t.Fatal(err)
		}
		off, err := w.LastRecordOffset() // NB: where it begins
		if err != nil {
			t.Fatal(err)
		}
		starts = append(starts, off)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return bytes.Clone(buf.Bytes()), append(starts, int64(buf.Len()))
}

// scanManifestBytes scans manifest bytes b as acceptManifestDamage scans
// a file.
func scanManifestBytes(b []byte) logScan {
	return scanBlocks(logScan{end: -1, legacy: true}, b)
}

// Ensure that the scan of a MANIFEST agrees with the layout that
// Pebble's own writer makes: a sound one reads whole, one cut short
// anywhere (then nothing, or zeros) is a torn tail with no record after
// it, and random damage to 1-4 bytes of a record is refused (records
// after it) exactly when a later record begins after the damage. The
// oracle: the records' offsets the writer gives, and Pebble's reader.
func TestManifestScanAgainstPebbleWriter(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	iters := 30
	if testing.Short() {
		iters = 8
	}
	for iter := 0; iter < iters; iter++ {
		const nrec = 40
		b, starts := pebbleManifest(t, rng, nrec)
		end := starts[nrec]
		if s := scanManifestBytes(b); s.end >= 0 || s.chunks != 0 {
			t.Fatalf("a sound manifest read as damaged: %+v", s)
		}
		r := record.NewReader(bytes.NewReader(b), 0)
		for i := range nrec {
			rec, err := r.Next()
			if err != nil {
				t.Fatalf("Pebble's reader: record %d: %v", i, err)
			}
			io.Copy(io.Discard, rec)
		}
		for range 20 {
			x := rng.Int64N(end + 1)
			for _, tail := range [][]byte{nil, make([]byte, rng.IntN(40000))} {
				c := append(bytes.Clone(b[:x]), tail...)
				if s := scanManifestBytes(c); s.records != 0 {
					t.Fatalf("a manifest torn at %d (then %d zeros) read as damaged: %+v", x, len(tail), s)
				}
			}
		}
		lastRecord := starts[nrec-1]
		for range 40 {
			p := rng.Int64N(end - 4)
			n := 1 + rng.Int64N(4)
			c := bytes.Clone(b)
			for j := range n {
				c[p+j] ^= byte(1 + rng.IntN(255))
			}
			// NB: damage to a block's padding is never read.
			if blockTail := logBlockSize - p%logBlockSize; blockTail < legacyChunkHdr && p+n <= p+blockTail {
				continue
			}
			want := p+n <= lastRecord
			if s := scanManifestBytes(c); (s.records > 0) != want {
				t.Errorf("damage at %d+%d (the last record at %d): %d records after it, want them %v", p, n, lastRecord, s.records, want)
			}
		}
	}
}

// damagedThenWhole returns the manifest sound, whose records begin at
// offsets (manifestRecords), followed by a chunk whose checksum fails and
// then a whole record (a copy of its last): damage before a record, which
// is refused, not a torn tail.
func damagedThenWhole(sound []byte, offsets []int64) []byte {
	nrec := len(offsets) - 1
	b := append(bytes.Clone(sound), 0xef, 0xbe, 0xad, 0xde, 4, 0, chunkLegacyFull, 1, 2, 3, 4)
	return append(b, sound[offsets[nrec-1]:offsets[nrec]]...)
}

// Ensure that cutManifest cuts the manifest that an accepting open read
// at its damage when Pebble still has it as its current one, leaving its
// copy, so that the next open reads the records before the damage with
// no damage found, and that it changes nothing when no copy was kept or
// Pebble has written a new manifest since. A writable open of Pebble's
// writes a new manifest here, so TestOpenRefusesManifestDamage does not
// reach the cut. The oracle: the manifest's bytes before the damage, and
// the documents written.
func TestCutManifest(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "idx")
	d := mustOpen(t, dir, nil)
	for b := range 3 {
		var docs []Doc
		for i := range 50 {
			docs = append(docs, Doc{ID: fmt.Sprintf("b%d-%d", b, i), Text: fmt.Sprintf("document %d of batch %d, each batch flushed to a table of its own", i, b)})
		}
		if _, err := d.PutBatch(docs, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.pdb.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	const want = 150
	manifest, offsets := manifestRecords(t, dir)
	nrec := len(offsets) - 1
	sound, err := os.ReadFile(manifest)
	if err != nil {
		t.Fatal(err)
	}
	damaged := damagedThenWhole(sound, offsets)
	if err := os.WriteFile(manifest, damaged, 0o644); err != nil {
		t.Fatal(err)
	}
	var dmg *LogDamageError
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.As(err, &dmg) || !dmg.Manifest || dmg.Log != manifest || dmg.Offset != offsets[nrec] {
		t.Fatalf("the damaged manifest: %v, want its damage at %d", err, offsets[nrec])
	}
	// No copy kept (a read-only open's damage): nothing is cut.
	if err := cutManifest(vfs.Default, dir, dmg); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(manifest); !bytes.Equal(b, damaged) {
		t.Fatalf("cutManifest without a copy changed the manifest (%d bytes, was %d)", len(b), len(damaged))
	}
	kept, err := keepDamagedLog(vfs.Default, dir, dmg)
	if err != nil {
		t.Fatal(err)
	}
	dmg.Kept = kept
	// Another manifest current (as after Pebble wrote a new one): the
	// damaged one, no longer read, is left as it is.
	other := *dmg
	other.Log = manifest + "-other"
	if err := cutManifest(vfs.Default, dir, &other); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(other.Log); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("cutManifest wrote %s, a manifest that Pebble does not have as its current one: %v", other.Log, err)
	}
	if b, _ := os.ReadFile(manifest); !bytes.Equal(b, damaged) {
		t.Fatal("cutManifest changed the current manifest, given another's damage")
	}
	// The current one, copied: cut at the damage, its copy kept whole.
	if err := cutManifest(vfs.Default, dir, dmg); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(manifest); err != nil || !bytes.Equal(b, sound) {
		t.Fatalf("the cut manifest: %d bytes (%v), want the %d before the damage", len(b), err, len(sound))
	}
	if b, err := os.ReadFile(kept); err != nil || !bytes.Equal(b, damaged) {
		t.Fatalf("the copy %s: %d bytes (%v), want the damaged manifest whole", kept, len(b), err)
	}
	d = mustOpen(t, dir, nil)
	defer d.Close()
	if n, err := d.Count(); err != nil || n != want || d.ManifestDamage() != nil {
		t.Fatalf("reopened after the cut: Count %d, %v, damage %+v; want %d and none", n, err, d.ManifestDamage(), want)
	}
}
