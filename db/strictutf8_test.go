package db

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// Two Latin-1 texts that differ in every accented letter: read as UTF-8,
// each such byte is U+FFFD, and they are one text (an embedder's review,
// EMB-9).
const (
	latin1A = "caf\xe9 au lait with cr\xe8me br\xfbl\xe9e and more words"
	latin1B = "caf\xe8 au lait with cr\xe9me br\xfcl\xe8e and more words"
)

// Ensure that by default a text that is not UTF-8 is taken with each bad
// byte as U+FFFD (so that the two Latin-1 texts above match at 1.0, as
// Doc.Text says), and that with Options.StrictUTF8 every way in refuses
// it with ErrInvalidDoc, naming the first bad byte, and stores nothing:
// the oracle is a reopened index's count and a query of the refused
// document's own words.
func TestStrictUTF8(t *testing.T) {
	ctx := context.Background()
	t.Run("default", func(t *testing.T) {
		d := mustOpen(t, filepath.Join(t.TempDir(), "index"), nil)
		if err := d.Put(Doc{ID: "a", Text: latin1A}, nil); err != nil {
			t.Fatal(err)
		}
		res, err := d.Query(ctx, latin1B, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Matches) != 1 || res.Matches[0].Jaccard != 1 {
			t.Fatalf("the other Latin-1 text matched %+v, want a at 1.0 (each bad byte U+FFFD)", res.Matches)
		}
	})

	dir := filepath.Join(t.TempDir(), "index")
	d := mustOpen(t, dir, &Options{StrictUTF8: true})
	good := Doc{ID: "good", Text: "caf\u00e9 au lait with cr\u00e8me br\u00fbl\u00e9e and more words \ufffd"}
	bad := Doc{ID: "bad", Text: latin1A}
	refused := func(what string, err error, at string) {
		t.Helper()
		if !errors.Is(err, ErrInvalidDoc) {
			t.Errorf("%s: %v, want ErrInvalidDoc", what, err)
			return
		}
		if !strings.Contains(err.Error(), "not UTF-8: byte "+at) {
			t.Errorf("%s: %q does not name the first bad byte (%s)", what, err, at)
		}
	}
	refused("Validate", d.Validate(bad), "0xe9 at offset 3 of 45")
	refused("Put", d.Put(bad, nil), "0xe9 at offset 3 of 45")
	_, err := d.PutBatch([]Doc{good, bad}, nil)
	refused("PutBatch", err, "0xe9 at offset 3 of 45")
	_, err = d.PutIfNew(bad, nil)
	refused("PutIfNew", err, "0xe9 at offset 3 of 45")
	_, err = d.PrepareBatch([]Doc{bad}, nil)
	refused("PrepareBatch", err, "0xe9 at offset 3 of 45")
	_, err = d.Load(ctx, seqOf([]Doc{good, bad}), nil)
	refused("Load", err, "0xe9 at offset 3 of 45")
	_, err = d.Query(ctx, latin1B, nil)
	refused("Query", err, "0xe8 at offset 3 of 45")
	_, err = d.QueryMany(ctx, []QueryInput{{Text: "valid words here"}, {Text: "tail \xff"}}, nil)
	refused("QueryMany", err, "0xff at offset 5 of 6")
	// A truncated sequence and a surrogate's encoding are not UTF-8
	// either; U+FFFD itself, written as UTF-8, is.
	refused("a cut sequence", d.Validate(Doc{ID: "cut", Text: "ab\xe2\x82"}), "0xe2 at offset 2 of 4")
	refused("a surrogate", d.Validate(Doc{ID: "sur", Text: "ab\xed\xa0\x80"}), "0xed at offset 2 of 5")
	if err := d.Validate(good); err != nil {
		t.Fatalf("a UTF-8 text (with U+FFFD in it): %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}

	d = mustOpen(t, dir, &Options{StrictUTF8: true})
	if n, err := d.Count(); err != nil || n != 0 {
		t.Fatalf("after every refusal the index holds %d documents (%v), want 0", n, err)
	}
	if err := d.Put(good, nil); err != nil {
		t.Fatalf("a UTF-8 text: %v", err)
	}
	res, err := d.Query(ctx, good.Text, nil)
	if err != nil || len(res.Matches) != 1 || res.Matches[0].ID != "good" {
		t.Fatalf("query of the UTF-8 text: %+v, %v", res, err)
	}
}
