package db

import (
	"bufio"
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/minhash"
)

// The golden indexes in testdata/golden were made by the command from
// testdata/golden/format1/docs.jsonl's documents (a sample of
// debian-descriptions; see testdata/corpora/debian-sample/SOURCE.md),
// with --num-perm 64 --threshold 0.5:
//
//   - format1/text and format1/sets: by lshdb before format 2, with and
//     without --store-text: a build of 36 documents, an insert of 4, a
//     delete and an upsert (docs.jsonl is the state they end in);
//   - format2/text, format2/sets, format2/none: by format 2's lshdb,
//     one per --storage: a build of 36, an insert of 4, an insert and a
//     delete;
//   - format3/text, format3/sets, format3/none: the same by format 3's;
//   - format5/text, format5/sets, format5/none: the same by format 5's
//     (make-format5.sh).
//
// They hold every kind of record and merge operand a real index does; a
// change to the format that they do not read back is a format change.

// goldenDocs returns the documents of the golden indexes, by id.
func goldenDocs(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../testdata/golden/format1/docs.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	docs := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d struct{ ID, Text string }
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		docs[d.ID] = d.Text
	}
	if err := sc.Err(); err != nil || len(docs) != 40 {
		t.Fatalf("golden documents: %d, %v", len(docs), err)
	}
	return docs
}

// copyGolden copies a golden index into a temporary directory (opening
// one writes its lock file and, when writable, new Pebble files).
func copyGolden(t *testing.T, name string) string {
	t.Helper()
	src := filepath.Join("../testdata/golden", name)
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// checkGolden checks an index against the golden documents: count,
// texts where stored, consistency, and Pairs against brute force over the
// model (exact Jaccard of the 64-bit sets in text mode, of the 32-bit
// sets in sets mode, the signatures' estimate in none mode).
func checkGolden(t *testing.T, d *DB, docs map[string]string) {
	t.Helper()
	p := d.Params()
	m := newModel(t, p)
	for id, text := range docs {
		m.docs[id] = m.doc(text)
	}
	if n, err := d.Count(); err != nil || n != uint64(len(docs)) {
		t.Fatalf("Count = %d, %v; want %d", n, err, len(docs))
	}
	for id, text := range docs {
		doc, err := d.Get(id)
		if err != nil {
			t.Fatal(err)
		}
		if p.Storage == StorageText && (!doc.HasText || doc.Text != text) {
			t.Fatalf("%s: text %q, want %q", id, doc.Text, text)
		}
		if p.Storage != StorageNone && !slices.Equal(doc.Shingles, m.docs[id].set) {
			t.Fatalf("%s: the stored set differs from the model's", id)
		}
		if p.Storage == StorageNone && doc.Shingles != nil {
			t.Fatalf("%s: none mode's Shingles %v, want nil (as documented)", id, doc.Shingles)
		}
	}
	rep, err := d.Check(context.Background())
	if err != nil || !rep.OK() {
		t.Fatalf("check: %v, %v", rep, err)
	}
	if p.Storage != StorageNone {
		checkPairs(t, d, m)
		return
	}
	want := map[[2]string]float64{}
	for a, da := range m.docs {
		for b, db := range m.docs {
			if a < b && sharesBand(da, db) {
				// NB: no higher than the sizes allow, as Pairs gives it.
				bound := float64(min(len(da.set), len(db.set))) / float64(max(len(da.set), len(db.set)))
				if e := min(minhash.Estimate(da.sig, db.sig), bound); e >= p.Threshold {
					want[[2]string{a, b}] = e
				}
			}
		}
	}
	got := map[[2]string]float64{}
	for pr, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		got[[2]string{min(pr.A, pr.B), max(pr.A, pr.B)}] = pr.Jaccard
	}
	if !maps.Equal(got, want) || len(want) == 0 {
		t.Fatalf("none mode: Pairs found %d pairs, the estimates %d", len(got), len(want))
	}
}

// Ensure that a format 1 index is refused with ErrFormat, naming the
// upgrade, and that the refusal leaves it upgradable.
func TestFormat1IsRefused(t *testing.T) {
	dir := copyGolden(t, "format1/text")
	for _, o := range []*Options{nil, {ReadOnly: true}} {
		_, err := Open(dir, o)
		if !errors.Is(err, ErrFormat) {
			t.Fatalf("Open(%+v) = %v, want ErrFormat", o, err)
		}
		if want := "lshdb upgrade --db " + dir; !strings.Contains(err.Error(), want) {
			t.Fatalf("the error %q does not say %q", err, want)
		}
	}
	if _, err := Upgrade(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
}

// Ensure that upgrading each golden format 1 index gives a current index
// of the expected mode whose every answer is the brute-force one: in text
// mode the exact Jaccard of every pair equals format 1's (the 64-bit
// sets, re-derived from the text), and the upgrade survives a reopen and
// is not repeated.
func TestUpgradeFormat1(t *testing.T) {
	docs := goldenDocs(t)
	for _, c := range []struct{ name, storage string }{{"format1/text", StorageText}, {"format1/sets", StorageSets}} {
		t.Run(c.name, func(t *testing.T) {
			dir := copyGolden(t, c.name)
			rep, err := Upgrade(context.Background(), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			if rep.From != 1 || rep.To != codec.FormatVersion || rep.Storage != c.storage || rep.Docs != len(docs) {
				t.Fatalf("report %+v", rep)
			}
			d := mustOpen(t, dir, &Options{ReadOnly: true})
			if p := d.Params(); p.FormatVersion != codec.FormatVersion || p.Storage != c.storage {
				t.Fatalf("params after the upgrade: %+v", p)
			}
			checkGolden(t, d, docs)
			if with, without := sketches(t, d); (c.storage == StorageText) != (with == len(docs) && without == 0) {
				t.Fatalf("after the upgrade, %d records with a sketch, %d without", with, without)
			}
			// NB: made before instances, it gets one, another than a
			// copy upgraded apart gets (a compatibility review, C3).
			info, err := d.Info()
			if err != nil || len(info.Instance) != 26 {
				t.Fatalf("the upgraded index's instance: %+v, %v", info, err)
			}
			other := copyGolden(t, c.name)
			if _, err := Upgrade(context.Background(), other, nil); err != nil {
				t.Fatal(err)
			}
			od := mustOpen(t, other, &Options{ReadOnly: true})
			oinfo, err := od.Info()
			od.Close()
			if err != nil || oinfo.Instance == info.Instance || len(oinfo.Instance) != 26 {
				t.Fatalf("two copies upgraded apart: instances %q and %q (%v)", info.Instance, oinfo.Instance, err)
			}
			d.Close()
			rep, err = Upgrade(context.Background(), dir, nil)
			if err != nil || rep.From != codec.FormatVersion || rep.To != codec.FormatVersion || rep.Docs != 0 {
				t.Fatalf("a second upgrade: %+v, %v", rep, err)
			}
			// Writable again, and writes go on.
			d = mustOpen(t, dir, nil)
			if err := d.Put(Doc{ID: "new", Text: docs["hunspell-nl"] + " again"}, nil); err != nil {
				t.Fatal(err)
			}
			docs := maps.Clone(docs)
			docs["new"] = docs["hunspell-nl"] + " again"
			checkGolden(t, d, docs)
			d.Close()
		})
	}
}

// Ensure that an upgrade refuses (ErrCorrupt, nothing changed) a text
// index whose stored text no longer gives its stored set, and that it
// stops at a cancelled context with the index as it was.
func TestUpgradeRefusesAndStops(t *testing.T) {
	dir := copyGolden(t, "format1/text")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Upgrade(ctx, dir, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled upgrade: %v", err)
	}
	if _, err := Open(dir, nil); !errors.Is(err, ErrFormat) {
		t.Fatalf("after a cancelled upgrade: %v", err)
	}
	names := func() []string {
		var out []string
		fs.WalkDir(os.DirFS(dir), ".", func(p string, e fs.DirEntry, err error) error {
			out = append(out, p)
			return nil
		})
		return out
	}
	for _, n := range names() {
		if strings.Contains(n, loadTmpDir) {
			t.Fatalf("a cancelled upgrade left %s", n)
		}
	}
}

// sketches counts the doc records of d that hold a sketch, and those that
// do not.
func sketches(t *testing.T, d *DB) (with, without int) {
	t.Helper()
	err := scan(context.Background(), d.pdb, codec.DocPrefix, codec.DocPrefixEnd, func(k, v []byte) {
		view, err := codec.ParseDocView(v)
		if err != nil {
			t.Fatal(err)
		}
		if view.Sketch() != nil {
			with++
		} else {
			without++
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return with, without
}

// rewriteRecord replaces the stored record of document id with what
// change makes of it, behind the database's back (no other key changes),
// and returns the record's key and its new bytes.
func rewriteRecord(t *testing.T, d *DB, id string, change func(*codec.DocRecord)) (key, v []byte) {
	t.Helper()
	doc, err := d.Get(id)
	if err != nil {
		t.Fatal(err)
	}
	key = codec.AppendDocKey(nil, doc.Num)
	v, ok, err := getCopy(d.pdb, key)
	if err != nil || !ok {
		t.Fatalf("the record of %q: %v, %v", id, ok, err)
	}
	var rec codec.DocRecord
	if err := codec.DecodeDocRecord(v, &rec); err != nil {
		t.Fatal(err)
	}
	change(&rec)
	v = codec.AppendDocRecord(nil, &rec)
	if err := d.pdb.Set(key, v, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	return key, v
}

// Ensure that the golden format 2, 3 and 5 indexes read back: every
// document, every pair (against a brute-force join), a clean check, in
// each storage mode; and that each is written in its own format (format 2
// keeps its fingerprint of the sorted set, which Check verifies; only
// format 5 text records hold a sketch), with no upgrade.
func TestFormatGolden(t *testing.T) {
	docs := goldenDocs(t)
	for _, format := range []int{2, 3, 5} {
		for _, mode := range []string{StorageText, StorageSets, StorageNone} {
			t.Run(fmt.Sprintf("format%d/%s", format, mode), func(t *testing.T) {
				dir := copyGolden(t, fmt.Sprintf("format%d/%s", format, mode))
				d := mustOpen(t, dir, &Options{ReadOnly: true})
				if p := d.Params(); p.Storage != mode || p.FormatVersion != format {
					t.Fatalf("params %+v", p)
				}
				checkGolden(t, d, docs)
				res, err := d.QueryID(context.Background(), "libghc-aeson-dev", nil)
				if err != nil || res.EstimateOnly != (mode == StorageNone) || len(res.Matches) == 0 {
					t.Fatalf("QueryID: %+v, %v", res, err)
				}
				d.Close()
				d = mustOpen(t, dir, nil)
				defer d.Close()
				docs := maps.Clone(docs)
				docs["new"] = docs["hunspell-nl"] + " again"
				docs["libghc-aeson-dev"] += " upserted"
				for _, id := range []string{"new", "libghc-aeson-dev"} {
					if err := d.Put(Doc{ID: id, Text: docs[id]}, nil); err != nil {
						t.Fatal(err)
					}
				}
				if p := d.Params(); p.FormatVersion != format {
					t.Fatalf("format after writes: %d", p.FormatVersion)
				}
				checkGolden(t, d, docs)
				with, without := sketches(t, d)
				if want := format >= codec.SketchFormatVersion && mode == StorageText; (with == len(docs) && without == 0) != want || (with == 0) == want {
					t.Fatalf("%d records with a sketch, %d without", with, without)
				}
				if rep, err := Upgrade(context.Background(), dir, nil); !errors.Is(err, ErrLocked) {
					t.Fatalf("Upgrade of an open index: %+v, %v", rep, err)
				}
				d.Close()
				// Only a text index before format 5 is upgraded: its
				// records gain their sketches.
				rep, err := Upgrade(context.Background(), dir, nil)
				if mode != StorageText || format >= codec.SketchFormatVersion {
					if err != nil || rep.From != format || rep.To != format || rep.Docs != 0 {
						t.Fatalf("Upgrade: %+v, %v", rep, err)
					}
					return
				}
				if err != nil || rep.From != format || rep.To != codec.FormatVersion || rep.Docs != len(docs) {
					t.Fatalf("Upgrade: %+v, %v", rep, err)
				}
				d = mustOpen(t, dir, nil)
				if p := d.Params(); p.FormatVersion != codec.FormatVersion || p.Storage != mode {
					t.Fatalf("params after the upgrade: %+v", p)
				}
				if with, without := sketches(t, d); with != len(docs) || without != 0 {
					t.Fatalf("after the upgrade, %d records with a sketch, %d without", with, without)
				}
				checkGolden(t, d, docs)
				d.Close()
				if rep, err := Upgrade(context.Background(), dir, nil); err != nil || rep.To != codec.FormatVersion || rep.Docs != 0 {
					t.Fatalf("a second upgrade: %+v, %v", rep, err)
				}
			})
		}
	}
}

// Ensure that a format 3 index becomes format 4 at its first write with a
// TTL (a Put, and on another copy a Load), says so after a reopen, and
// goes on writing records without a sketch that Pairs derives, with every
// pair still the brute-force one; and that its upgrade to format 5 keeps
// the expiry.
func TestFormat3TakesExpiry(t *testing.T) {
	docs := goldenDocs(t)
	for _, how := range []string{"put", "load"} {
		t.Run(how, func(t *testing.T) {
			dir := copyGolden(t, "format3/text")
			d := mustOpen(t, dir, nil)
			defer func() { d.Close() }()
			docs := maps.Clone(docs)
			docs["expiring"] = docs["hunspell-nl"] + " for an hour"
			doc := Doc{ID: "expiring", Text: docs["expiring"]}
			var err error
			if how == "put" {
				err = d.Put(doc, &WriteOptions{TTL: time.Hour})
			} else {
				_, err = d.Load(context.Background(), func(yield func(Doc, error) bool) { yield(doc, nil) }, &LoadOptions{TTL: time.Hour})
			}
			if err != nil {
				t.Fatal(err)
			}
			if v := d.Params().FormatVersion; v != codec.ExpiryFormatVersion {
				t.Fatalf("after a write with a TTL, format %d", v)
			}
			d.Close()
			d = mustOpen(t, dir, nil)
			if v := d.Params().FormatVersion; v != codec.ExpiryFormatVersion {
				t.Fatalf("reopened, format %d", v)
			}
			if with, _ := sketches(t, d); with != 0 {
				t.Fatalf("%d records of a format 4 index hold a sketch", with)
			}
			checkGolden(t, d, docs)
			before, err := d.Get("expiring")
			if err != nil || before.ExpiresAt.IsZero() {
				t.Fatalf("Get: %+v, %v", before, err)
			}
			// The upgrade to format 5 keeps the expiry.
			d.Close()
			if rep, err := Upgrade(context.Background(), dir, nil); err != nil || rep.From != codec.ExpiryFormatVersion || rep.To != codec.FormatVersion {
				t.Fatalf("Upgrade: %+v, %v", rep, err)
			}
			d = mustOpen(t, dir, nil)
			if after, err := d.Get("expiring"); err != nil || !after.ExpiresAt.Equal(before.ExpiresAt) {
				t.Fatalf("after the upgrade: %+v, %v; want expiry %v", after, err, before.ExpiresAt)
			}
			checkGolden(t, d, docs)
		})
	}
}

// Ensure that the upgrade of a format 3 text index refuses (ErrCorrupt,
// nothing changed: still format 3, the record as it was) a record whose
// stored text no longer gives its stored set.
func TestUpgradeToSketchesRefusesACorruptText(t *testing.T) {
	dir := copyGolden(t, "format3/text")
	d := mustOpen(t, dir, nil)
	k, bad := rewriteRecord(t, d, "hunspell-nl", func(rec *codec.DocRecord) { rec.Text = "a different text altogether" })
	d.Close()
	if rep, err := Upgrade(context.Background(), dir, nil); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "hunspell-nl") {
		t.Fatalf("Upgrade: %+v, %v; want ErrCorrupt naming the document", rep, err)
	}
	d = mustOpen(t, dir, &Options{ReadOnly: true})
	defer d.Close()
	if v := d.Params().FormatVersion; v != 3 {
		t.Fatalf("after a refused upgrade, format %d", v)
	}
	if got, _, err := getCopy(d.pdb, k); err != nil || !bytes.Equal(got, bad) {
		t.Fatalf("after a refused upgrade the record changed: %v", err)
	}
}

// Ensure that a text mode record whose text no longer gives its stored
// set size is ErrCorrupt to Pairs (from the set file's workers) and to
// Check, and that Pairs returns rather than hangs.
func TestPairsReportsACorruptText(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.5, NoSync: true})
	defer d.Close()
	docs := goldenDocs(t)
	for id, text := range docs {
		if err := d.Put(Doc{ID: id, Text: text}, nil); err != nil {
			t.Fatal(err)
		}
		if err := d.Put(Doc{ID: id + "-copy", Text: text + " copy"}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Replace one record's text, keeping the rest of the record.
	rewriteRecord(t, d, "hunspell-nl", func(rec *codec.DocRecord) { rec.Text = "a different text altogether" })
	var perr error
	for _, err := range d.Pairs(context.Background(), nil) {
		if err != nil {
			perr = err
		}
	}
	if !errors.Is(perr, ErrCorrupt) {
		t.Fatalf("Pairs: %v, want ErrCorrupt", perr)
	}
	rep, err := d.Check(context.Background())
	if err != nil || rep.OK() {
		t.Fatalf("Check: %v, %v", rep, err)
	}
}

// Ensure that Check reports a stored sketch that is not its signature's
// (Pairs would rule pairs out by it), and passes the index before it.
func TestCheckFindsABadSketch(t *testing.T) {
	d := mustOpen(t, t.TempDir(), &Options{Threshold: 0.5, NoSync: true})
	defer d.Close()
	for id, text := range goldenDocs(t) {
		if err := d.Put(Doc{ID: id, Text: text}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if rep, err := d.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check before: %v, %v", rep, err)
	}
	rewriteRecord(t, d, "hunspell-nl", func(rec *codec.DocRecord) {
		if len(rec.Sketch) == 0 {
			t.Fatalf("a format 5 text record without a sketch: %+v", rec)
		}
		rec.Sketch[3] ^= 0x10 // one place, the high half of a byte
	})
	rep, err := d.Check(context.Background())
	if err != nil || rep.OK() || !strings.Contains(fmt.Sprint(rep.Problems), "the stored sketch is not its signature's") {
		t.Fatalf("Check: %+v, %v", rep, err)
	}

	// A right sketch in a format 3 index, which an older build must read,
	// is a problem too.
	old := mustOpen(t, copyGolden(t, "format3/text"), nil)
	defer old.Close()
	rewriteRecord(t, old, "hunspell-nl", func(rec *codec.DocRecord) {
		if rec.Sketch != nil {
			t.Fatalf("a format 3 record with a sketch: %+v", rec)
		}
		_, sig := old.hashers.Get().(*minhash.Hasher).Document(nil, nil, rec.Text)
		rec.Sketch = codec.AppendSketch(nil, sig)
	})
	rep, err = old.Check(context.Background())
	if err != nil || rep.OK() || !strings.Contains(fmt.Sprint(rep.Problems), "a sketch in a format 3 text index") {
		t.Fatalf("Check of format 3: %+v, %v", rep, err)
	}
}

// Ensure that a batch of upserts large enough to look up the documents it
// replaces on several goroutines (lookupOlds) answers as one loop would:
// with two corrupt records among those it replaces, the error names the
// first in the batch's order and nothing is written; on a sound index
// every replaced document's postings go (a clean Check, the counts of a
// model) and every new text is found.
func TestUpsertBatchLooksUpOldsInOrder(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	rng := rand.New(rand.NewPCG(11, 12))
	words := strings.Fields("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho sigma tau upsilon phi chi psi omega")
	text := func() string {
		w := make([]string, 30)
		for i := range w {
			w[i] = words[rng.IntN(len(words))] + fmt.Sprint(rng.IntN(50))
		}
		return strings.Join(w, " ")
	}
	const n = 4 * lookupOldsPerWorker * 2
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: fmt.Sprintf("d%03d", i), Text: text()}
	}
	// The batch: every stored id with a new text, and as many new ids.
	batch := make([]Doc, 0, 2*n)
	for i := range docs {
		batch = append(batch, Doc{ID: docs[i].ID, Text: text()}, Doc{ID: fmt.Sprintf("new%03d", i), Text: text()})
	}

	d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d.Close()
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	// NB: neighbours in the batch, so that both are often looked up at
	// once, on two goroutines, and the later one may fail first.
	first, last := docs[n/3].ID, docs[n/3+1].ID
	for _, id := range []string{last, first} {
		rewriteRecord(t, d, id, func(rec *codec.DocRecord) { rec.Text = "a different text altogether" })
	}
	for range 20 {
		_, err := d.PutBatch(batch, nil)
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("%q", first)) {
			t.Fatalf("PutBatch over two corrupt records: %v; want ErrCorrupt naming %s, the first in the batch", err, first)
		}
	}
	if c, err := d.Count(); err != nil || c != n {
		t.Fatalf("after a refused batch: %d documents, %v; want %d", c, err, n)
	}
	if got, err := d.Get(docs[0].ID); err != nil || got.Text != docs[0].Text {
		t.Fatalf("after a refused batch %s reads %q, %v", docs[0].ID, got.Text, err)
	}

	d2 := mustOpen(t, t.TempDir(), &Options{NoSync: true})
	defer d2.Close()
	if _, err := d2.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	res, err := d2.PutBatch(batch, nil)
	if err != nil || res.Replaced != n {
		t.Fatalf("PutBatch: %+v, %v; want %d replaced", res, err, n)
	}
	if c, err := d2.Count(); err != nil || c != 2*n {
		t.Fatalf("%d documents, %v; want %d", c, err, 2*n)
	}
	if rep, err := d2.Check(context.Background()); err != nil || !rep.OK() {
		t.Fatalf("Check: %+v, %v", rep, err)
	}
	for _, doc := range batch {
		r, err := d2.Query(context.Background(), doc.Text, nil)
		if err != nil || len(r.Matches) == 0 || r.Matches[0].ID != doc.ID || r.Matches[0].Jaccard != 1 {
			t.Fatalf("query by the text of %s: %+v, %v", doc.ID, r, err)
		}
	}
}

// Ensure that a put with a TTL on a format 2 index, which this build reads
// but cannot give expiry, is refused with ErrFormat in words that say so
// and name the way out (lshdb upgrade, not a rebuild), storing nothing;
// and that after Upgrade the same put is stored and expires. A sets or
// none index of format 2, which Upgrade leaves as it is, is told to be
// built anew instead.
func TestFormat2TTLSaysUpgrade(t *testing.T) {
	for _, mode := range []string{"sets", "none"} {
		d, err := Open(copyGolden(t, "format2/"+mode), nil)
		if err != nil {
			t.Fatal(err)
		}
		err = d.Put(Doc{ID: "ttl", Text: "a document that should expire in an hour"}, &WriteOptions{TTL: time.Hour})
		if !errors.Is(err, ErrFormat) || strings.Contains(err.Error(), "upgrade --db") || !strings.Contains(err.Error(), "build a new one") {
			t.Errorf("a TTL put on a format 2 %s index: %v, want ErrFormat saying to build anew", mode, err)
		}
		d.Close()
	}
	// NB: a sets index that also stores its texts is rebuilt from them
	// (a compatibility review, C5): its manifest says so here.
	dir := copyGolden(t, "format2/sets")
	editManifest(t, vfs.Default, dir, func(m *codec.Manifest) { m.StoreText = true })
	d, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Put(Doc{ID: "ttl", Text: "a document that should expire in an hour"}, &WriteOptions{TTL: time.Hour})
	// NB: the directory as the handle resolved it at Open (Dir), where a
	// temporary directory is reached through a link (macOS's /var).
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "lshdb export --db "+d.Dir()+" --all") {
		t.Errorf("a TTL put on a format 2 sets index with its texts: %v, want ErrFormat naming lshdb export", err)
	}
	d.Close()
	dir = copyGolden(t, "format2/text")
	d, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := d.Count()
	doc := Doc{ID: "ttl", Text: "a document that should expire in an hour"}
	err = d.Put(doc, &WriteOptions{TTL: time.Hour})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "lshdb upgrade --db") || strings.Contains(err.Error(), "older than this build reads") {
		t.Fatalf("a TTL put on format 2: %v, want ErrFormat naming lshdb upgrade", err)
	}
	if m, _ := d.Count(); m != n {
		t.Fatalf("the refused put changed the count from %d to %d", n, m)
	}
	d.Close()
	if _, err := Upgrade(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
	d, err = Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.Put(doc, &WriteOptions{TTL: time.Hour}); err != nil {
		t.Fatalf("a TTL put after Upgrade: %v", err)
	}
	if got, err := d.Get("ttl"); err != nil || got.ExpiresAt.IsZero() {
		t.Fatalf("Get(ttl) = %+v, %v; want it with its expiry", got, err)
	}
}

// Ensure that Check counts every problem it finds, those past the
// MaxProblems it lists included: with k id entries removed, each leaves
// a record no id names; the count at k = 20 (all listed) gives the
// problems besides them, and at k = 130 the count is 130 plus those.
func TestCheckCountsUnlistedProblems(t *testing.T) {
	count := func(k int) *CheckReport {
		d := mustOpen(t, t.TempDir(), &Options{NoSync: true})
		defer d.Close()
		for i := range 150 {
			if err := d.Put(Doc{ID: fmt.Sprintf("doc%03d", i), Text: fmt.Sprintf("the text of document number %d, a few words long", i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		for i := range k {
			if err := d.pdb.Delete(codec.AppendIDKey(nil, fmt.Sprintf("doc%03d", i)), pebble.Sync); err != nil {
				t.Fatal(err)
			}
		}
		rep, err := d.Check(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	few := count(20)
	if few.ProblemCount != len(few.Problems) || few.ProblemCount < 20 {
		t.Fatalf("20 unnamed records: %d problems counted, %d listed", few.ProblemCount, len(few.Problems))
	}
	many := count(130)
	if len(many.Problems) != MaxProblems {
		t.Errorf("%d problems listed, want MaxProblems (%d)", len(many.Problems), MaxProblems)
	}
	if want := 130 + few.ProblemCount - 20; many.ProblemCount != want {
		t.Errorf("130 unnamed records: %d problems counted, want %d", many.ProblemCount, want)
	}
}

// Ensure that Upgrade keeps the disk reserve: without room above it for
// a second copy of the records it is refused at once as ErrDiskFull,
// saying what it needs, with the index as it was (it failed on a raw "no
// space left on device", or filled the disk with its compaction and
// succeeded); with room for the copy but not for the compaction after it,
// it upgrades and says that the old records still take their space; with
// room for both, it compacts them away. The disk: a filesystem of a
// capacity set above what the index's files use.
func TestUpgradeKeepsTheReserve(t *testing.T) {
	const reserve = 1 << 20
	for _, c := range []struct {
		name        string
		room        float64 // free space above the reserve, in copies of the records
		refused     bool
		uncompacted bool
	}{{"no room", 0.5, true, false}, {"room to rewrite", 1.5, false, true}, {"room", 6, false, false}} {
		t.Run(c.name, func(t *testing.T) {
			docs := goldenDocs(t)
			dir := copyGolden(t, "format3/text")
			// Records enough (~2 MB) that what Pebble writes at an open
			// is small beside them.
			d := mustOpen(t, dir, nil)
			putRandomTexts(t, d, docs, 2000, 5)
			if err := d.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			need, err := d.pdb.EstimateDiskUsage(codec.DocPrefix, codec.DocPrefixEnd)
			d.Close()
			if err != nil || need < 1<<20 {
				t.Fatal(need, err)
			}
			// NB: an open removes the files that the compaction made
			// obsolete, and the logs: measured after one.
			mustOpen(t, dir, nil).Close()
			fs := &quotaFS{FS: vfs.Default, root: dir, capacity: 1 << 40}
			u, _ := fs.GetDiskUsage(dir)
			fs.capacity = int64(u.TotalBytes-u.AvailBytes) + reserve + int64(c.room*float64(need))
			rep, err := Upgrade(context.Background(), dir, &Options{fs: fs, DiskReserve: reserve})
			if c.refused {
				if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "writes the records anew") {
					t.Fatalf("Upgrade: %+v, %v; want ErrDiskFull", rep, err)
				}
			} else if err != nil || rep.To != codec.FormatVersion || rep.Uncompacted != c.uncompacted {
				t.Fatalf("Upgrade: %+v, %v; want uncompacted %v", rep, err, c.uncompacted)
			}
			d = mustOpen(t, dir, &Options{ReadOnly: true})
			defer d.Close()
			want := codec.FormatVersion
			if c.refused {
				want = 3
			}
			if v := d.Params().FormatVersion; v != want {
				t.Fatalf("format %d, want %d", v, want)
			}
			checkGolden(t, d, docs)
		})
	}
}

// Ensure that the old records of an upgrade stopped after its ingest (a
// crash there, made by a hook) are said by Info and freed by the next
// Upgrade, or by Compact: an index killed there stayed at 14 times its
// size, Info said nothing, and a second upgrade said it had nothing to
// do (a compatibility review, C2). The records' size on disk, measured
// before and after, and the golden documents are the oracles.
func TestUpgradeStoppedAfterIngest(t *testing.T) {
	for _, finish := range []string{"upgrade", "compact"} {
		t.Run(finish, func(t *testing.T) {
			docs := goldenDocs(t)
			dir := copyGolden(t, "format3/text")
			d := mustOpen(t, dir, nil)
			putRandomTexts(t, d, docs, 1000, 9)
			if err := d.Compact(context.Background()); err != nil {
				t.Fatal(err)
			}
			d.Close()
			records := func(d *DB) uint64 {
				n, err := d.pdb.EstimateDiskUsage(codec.DocPrefix, codec.DocPrefixEnd)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
			upgradeStopHook = func() bool { return true }
			rep, err := Upgrade(context.Background(), dir, nil)
			upgradeStopHook = nil
			if err != nil || rep.To != codec.FormatVersion || rep.Uncompacted || rep.Compacted {
				t.Fatalf("the stopped upgrade: %+v, %v", rep, err)
			}
			d = mustOpen(t, dir, nil)
			before := records(d)
			if info, err := d.Info(); err != nil || !info.UpgradeUncompacted {
				t.Fatalf("after an upgrade stopped after its ingest: %+v, %v; want UpgradeUncompacted", info, err)
			}
			checkGolden(t, d, docs)
			if finish == "compact" {
				if err := d.Compact(context.Background()); err != nil {
					t.Fatal(err)
				}
			} else {
				d.Close()
				rep, err := Upgrade(context.Background(), dir, nil)
				if err != nil || rep.From != codec.FormatVersion || !rep.Compacted || rep.Uncompacted {
					t.Fatalf("the next upgrade: %+v, %v; want the old records compacted", rep, err)
				}
				d = mustOpen(t, dir, nil)
			}
			after := records(d)
			if info, err := d.Info(); err != nil || info.UpgradeUncompacted {
				t.Fatalf("after the %s: %+v, %v; want no UpgradeUncompacted", finish, info, err)
			}
			if after*10 > before*7 {
				t.Fatalf("after the %s the records take %d bytes, %d before: the old ones stayed", finish, after, before)
			}
			checkGolden(t, d, docs)
			d.Close()
			if rep, err := Upgrade(context.Background(), dir, nil); err != nil || rep.Compacted || rep.Uncompacted || rep.From != rep.To {
				t.Fatalf("an upgrade after: %+v, %v; want nothing to do", rep, err)
			}
		})
	}
}

// Ensure that an upgrade to sketches counts the sketches in the room it
// needs: on short texts a record's 64-byte sketch, which no compressor
// shrinks, about doubles it, and an upgrade with room for the old
// records' size above the reserve passed the check, then filled the disk
// (a compatibility review, C1). With room for 1.3 times the old records
// it is now refused before it writes anything, and the index is as it
// was; with room for 4 times them it runs.
func TestUpgradeCountsTheSketches(t *testing.T) {
	const reserve = 1 << 20
	docs := goldenDocs(t)
	dir := copyGolden(t, "format3/text")
	d := mustOpen(t, dir, nil)
	rng := rand.New(rand.NewPCG(7, 8))
	var batch []Doc
	for i := range 20000 {
		id := fmt.Sprintf("short-%d", i)
		var text strings.Builder
		for range 8 {
			fmt.Fprintf(&text, "w%d ", rng.IntN(3000))
		}
		docs[id] = text.String()
		batch = append(batch, Doc{ID: id, Text: docs[id]})
		if len(batch) == 1000 {
			if _, err := d.PutBatch(batch, &WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	old, err := d.pdb.EstimateDiskUsage(codec.DocPrefix, codec.DocPrefixEnd)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	mustOpen(t, dir, nil).Close()
	for _, c := range []struct {
		room    float64
		refused bool
	}{{1.3, true}, {4, false}} {
		fs := &quotaFS{FS: vfs.Default, root: dir, capacity: 1 << 40}
		u, _ := fs.GetDiskUsage(dir)
		fs.capacity = int64(u.TotalBytes-u.AvailBytes) + reserve + int64(c.room*float64(old))
		rep, err := Upgrade(context.Background(), dir, &Options{fs: fs, DiskReserve: reserve})
		if c.refused && (!errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "writes the records anew")) {
			t.Fatalf("room for %v times the old records (%d bytes): %+v, %v; want refused before writing, ErrDiskFull", c.room, old, rep, err)
		}
		if !c.refused && (err != nil || rep.To != codec.FormatVersion) {
			t.Fatalf("room for %v times the old records: %+v, %v", c.room, rep, err)
		}
		d := mustOpen(t, dir, &Options{ReadOnly: true})
		want := codec.FormatVersion
		if c.refused {
			want = 3
		}
		if v := d.Params().FormatVersion; v != want {
			t.Fatalf("room for %v: format %d, want %d", c.room, v, want)
		}
		checkGolden(t, d, docs)
		d.Close()
	}
}

// TestUpgradeOfFormat1WithoutRoom: an upgrade of a format 1 index refused
// for want of room says to copy it as files: a backup reads only the
// formats this build reads, and the advice named lshdb backup.
func TestUpgradeOfFormat1WithoutRoom(t *testing.T) {
	const reserve = 1 << 20
	dir := copyGolden(t, "format1/text")
	// NB: the golden's records are in its log: flushed into tables, which
	// the upgrade's estimate reads.
	d := mustOpen(t, dir, &Options{MustExist: true, upgrading: true})
	if err := d.pdb.Flush(); err != nil {
		t.Fatal(err)
	}
	d.Close()
	mustOpen(t, dir, &Options{MustExist: true, upgrading: true}).Close()
	fs := &quotaFS{FS: vfs.Default, root: dir, capacity: 1 << 40}
	u, _ := fs.GetDiskUsage(dir)
	fs.capacity = int64(u.TotalBytes-u.AvailBytes) + reserve // no room above the reserve
	rep, err := Upgrade(context.Background(), dir, &Options{fs: fs, DiskReserve: reserve})
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "cp -a") || strings.Contains(err.Error(), "lshdb backup") {
		t.Fatalf("Upgrade of format 1 without room: %+v, %v; want ErrDiskFull advising cp -a", rep, err)
	}
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrFormat) {
		t.Fatalf("after the refused upgrade: %v, want the format 1 index as it was (ErrFormat)", err)
	}
}

// Ensure that an upgrade of a format 1 index counts the room its new
// records take, not the old ones': those hold the shingle set, 8 bytes a
// shingle, and an upgrade that needed 47 MiB was refused for want of 362
// MiB (a format review, FM-1). With room above the reserve for 0.6 of the
// old records and lists, the upgrade of the golden text index succeeds
// and gives back its documents. (A sets index's new records hold the
// signature and the 32-bit set, and the posting lists are written anew
// too: on the golden's 40 short texts the upgrade counts 0.67 of the old
// records and lists.)
func TestUpgradeOfFormat1CountsTheNewRecords(t *testing.T) {
	const reserve = 1 << 20
	for _, name := range []string{"format1/text"} {
		t.Run(name, func(t *testing.T) {
			docs := goldenDocs(t)
			dir := copyGolden(t, name)
			// NB: the golden's records are in its log: flushed into
			// tables, which the upgrade's estimate reads.
			d := mustOpen(t, dir, &Options{MustExist: true, upgrading: true})
			if err := d.pdb.Flush(); err != nil {
				t.Fatal(err)
			}
			records, err := d.pdb.EstimateDiskUsage(codec.DocPrefix, codec.DocPrefixEnd)
			if err != nil {
				t.Fatal(err)
			}
			lists, err := d.pdb.EstimateDiskUsage(codec.PostingPrefix, codec.PostingPrefixEnd)
			if err != nil {
				t.Fatal(err)
			}
			d.Close()
			mustOpen(t, dir, &Options{MustExist: true, upgrading: true}).Close()
			fs := &quotaFS{FS: vfs.Default, root: dir, capacity: 1 << 40}
			u, _ := fs.GetDiskUsage(dir)
			fs.capacity = int64(u.TotalBytes-u.AvailBytes) + reserve + int64(0.6*float64(records+lists))
			rep, err := Upgrade(context.Background(), dir, &Options{fs: fs, DiskReserve: reserve})
			if err != nil || rep.To != codec.FormatVersion {
				t.Fatalf("Upgrade with room for 0.6 of the old records and lists (%d bytes): %+v, %v", records+lists, rep, err)
			}
			d = mustOpen(t, dir, &Options{ReadOnly: true})
			defer d.Close()
			checkGolden(t, d, docs)
		})
	}
}

// putRandomTexts puts n documents extra-0 … of 150 random hex words each
// (about 1.3 KB of text), from a generator seeded with seed, into d, and
// adds them to docs.
func putRandomTexts(t *testing.T, d *DB, docs map[string]string, n int, seed uint64) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, seed+1))
	for i := range n {
		id := fmt.Sprintf("extra-%d", i)
		var text strings.Builder
		for range 150 {
			fmt.Fprintf(&text, "%x ", rng.Uint32())
		}
		docs[id] = text.String()
		if err := d.Put(Doc{ID: id, Text: docs[id]}, &WriteOptions{NoSync: true}); err != nil {
			t.Fatal(err)
		}
	}
}

// Ensure that Upgrade's report counts apart the documents whose TTL ran
// out, whose records it rewrites until the sweep removes them: it said 2
// documents of an index that lshdb info then said held 1 (an upgrade
// review's UPG-5). The oracle: Info after the upgrade, no sweep between.
func TestUpgradeCountsTheExpired(t *testing.T) {
	dir := copyGolden(t, "format3/text")
	clock := &fakeClock{t: time.Now()}
	o := &Options{clock: clock.now, ExpirySweep: -1}
	d := mustOpen(t, dir, o)
	before, _ := d.Count()
	if _, err := d.PutBatch([]Doc{{ID: "ttl-1", Text: "a document that expires in an hour"}, {ID: "ttl-2", Text: "another document that expires in an hour"}}, &WriteOptions{TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	d.Close()
	clock.advance(2 * time.Hour)
	rep, err := Upgrade(context.Background(), dir, o)
	if err != nil || rep.To != codec.FormatVersion {
		t.Fatalf("upgrade: %+v, %v", rep, err)
	}
	d = mustOpen(t, dir, o)
	defer d.Close()
	info, err := d.Info()
	if err != nil || rep.Expired != 2 || rep.Docs != int(before)+2 || info.Docs != uint64(rep.Docs) || info.Expired != uint64(rep.Expired) {
		t.Fatalf("upgrade of %d documents and 2 expired: %+v; Info %+v, %v", before, rep, info, err)
	}
}

// Ensure that the refusal of a format 1 index names what a stopped
// upgrade left in it (lshdb-load.tmp), which only the next upgrade
// removes: info, refused, could not show it (an upgrade review's UPG-7);
// and that the upgrade then removes it.
func TestFormat1RefusalNamesAStoppedUpgrade(t *testing.T) {
	dir := copyGolden(t, "format1/text")
	if _, err := Open(dir, &Options{ReadOnly: true}); !errors.Is(err, ErrFormat) || strings.Contains(err.Error(), loadTmpDir) {
		t.Fatalf("format 1, nothing left: %v; want ErrFormat naming no temporary files", err)
	}
	tmp := filepath.Join(dir, loadTmpDir)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	junk := make([]byte, 3<<20)
	crand.Read(junk) // NB: not zeros, which a compressing filesystem keeps small
	if err := os.WriteFile(filepath.Join(tmp, "000001.sst"), junk, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, &Options{ReadOnly: true})
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "an upgrade that was stopped left 3.0 MiB of temporary files in it ("+loadTmpDir+")") {
		t.Fatalf("format 1 with a stopped upgrade's files: %v", err)
	}
	if _, err := Upgrade(context.Background(), dir, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after the upgrade, %s: %v; want it removed", tmp, err)
	}
}
