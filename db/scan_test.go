package db

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// Ensure that Scan without sets yields what All yields (ids, numbers,
// texts, metadata, in insertion order, upserts and deletes applied: the
// model is a map of what was written) without shingles or signatures,
// that Scan with sets equals All, and that a cancelled context ends it
// with context.Canceled.
func TestScanEqualsAll(t *testing.T) {
	d := mustOpen(t, t.TempDir(), nil)
	defer d.Close()
	want := map[string]string{}
	var docs []Doc
	for i := range 300 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document number %d says something about %d things", i, i*7), Meta: []byte(fmt.Sprintf(`{"i":%d}`, i))})
	}
	if _, err := d.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	for _, doc := range docs {
		want[doc.ID] = doc.Text
	}
	if err := d.Put(Doc{ID: "d007", Text: "replaced text of seven", Meta: []byte(`{"i":7}`)}, nil); err != nil {
		t.Fatal(err)
	}
	want["d007"] = "replaced text of seven"
	if _, err := d.DeleteIDs([]string{"d010", "d011"}, nil); err != nil {
		t.Fatal(err)
	}
	delete(want, "d010")
	delete(want, "d011")
	var all, light, full []*StoredDoc
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, doc)
	}
	for doc, err := range d.Scan(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		light = append(light, doc)
	}
	for doc, err := range d.Scan(context.Background(), &ScanOptions{Sets: true}) {
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, doc)
	}
	if len(all) != len(want) || len(light) != len(all) || len(full) != len(all) {
		t.Fatalf("All %d, Scan %d, Scan with sets %d documents; want %d", len(all), len(light), len(full), len(want))
	}
	for i, a := range all {
		l, f := light[i], full[i]
		if want[a.ID] != a.Text || l.ID != a.ID || l.Num != a.Num || l.Text != a.Text || string(l.Meta) != string(a.Meta) || !l.HasText {
			t.Fatalf("doc %d: Scan %+v, All %+v, want text %q", i, l, a, want[a.ID])
		}
		if l.Shingles != nil || l.Signature != nil {
			t.Fatalf("doc %s: Scan without sets has shingles or a signature", l.ID)
		}
		if f.ID != a.ID || !slices.Equal(f.Shingles, a.Shingles) || !slices.Equal(f.Signature, a.Signature) || len(a.Signature) == 0 {
			t.Fatalf("doc %s: Scan with sets differs from All", a.ID)
		}
		if i > 0 && a.Num <= all[i-1].Num {
			t.Fatalf("not in insertion order at %d", i)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	var last error
	for _, err := range d.Scan(ctx, nil) {
		if err != nil {
			last = err
			break
		}
		if n++; n == 5 {
			cancel()
		}
	}
	if n != 5 || !errors.Is(last, context.Canceled) {
		t.Fatalf("after cancel at 5: %d documents, error %v", n, last)
	}
}
