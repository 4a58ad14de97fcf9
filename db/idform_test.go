package db

import (
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Ensure that a lookup of an id that is not stored names the stored id of
// the same characters in the other Unicode normalization form (they look
// alike in every output: a multilingual user's U6), written with escapes,
// and names nothing when no such id is stored. The oracle: ids written by
// hand in NFC (é as U+00E9) and NFD (e and U+0301).
func TestNotFoundNamesTheOtherForm(t *testing.T) {
	t.Run("pebble", func(t *testing.T) { testNotFoundNamesTheOtherForm(t, filepath.Join(t.TempDir(), "idx")) })
	t.Run("redis", func(t *testing.T) { testNotFoundNamesTheOtherForm(t, redisURL(t)) })
}

func testNotFoundNamesTheOtherForm(t *testing.T, where string) {
	d := mustOpen(t, where, nil)
	defer d.Close()
	nfc, nfd := "caf\u00e9-menu", "cafe\u0301-menu"
	if err := d.Put(Doc{ID: nfd, Text: "le café de la gare propose une crème brûlée"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Put(Doc{ID: "cr\u00e8me", Text: "une crème brûlée au café de la gare"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ id, hint string }{
		{nfc, "form NFD is stored: " + strconv.QuoteToASCII(nfd)},
		{"cre\u0300me", "form NFC is stored: " + strconv.QuoteToASCII("cr\u00e8me")},
		{"absent", ""},
		{"caf\u00e9", ""},
	} {
		_, err := d.Get(c.id)
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get(%q): %v, want ErrNotFound", c.id, err)
		}
		if got := strings.Contains(err.Error(), "Unicode form"); got != (c.hint != "") || c.hint != "" && !strings.Contains(err.Error(), c.hint) {
			t.Errorf("Get(%q): %v; want the hint %q", c.id, err, c.hint)
		}
	}
	if _, err := d.Get(nfd); err != nil {
		t.Errorf("the stored id: %v", err)
	}
	// A delete's miss names it too, alone or among other ids (the
	// DocError keeps the position), and deletes nothing.
	for _, ids := range [][]string{{nfc}, {"cr\u00e8me", nfc}} {
		_, err := d.DeleteIDs(ids, nil)
		var de *DocError
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "form NFD is stored: "+strconv.QuoteToASCII(nfd)) ||
			len(ids) > 1 && (!errors.As(err, &de) || de.Index != 1) {
			t.Errorf("DeleteIDs(%q): %v; want ErrNotFound with the hint", ids, err)
		}
	}
	if n, err := d.Count(); err != nil || n != 2 {
		t.Errorf("after the deletes refused: %d documents (%v), want 2", n, err)
	}
	if _, err := d.DeleteIDs([]string{"absent"}, nil); !errors.Is(err, ErrNotFound) || strings.Contains(err.Error(), "Unicode form") {
		t.Errorf("a delete of an id with no other form: %v", err)
	}
}
