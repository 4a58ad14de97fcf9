//go:build unix

package docio

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// Ensure that the bad records of a directory's entries that can hold no
// document match ErrNoDocuments (a walk's callers pass over them with a
// note, as binary files: a stale lock link or a socket in a watched tree
// failed a nightly build, O2-6): a pipe, a link to nothing, a link to a
// pipe; and that a link to a directory, whose documents may be meant,
// does not. Each matches ErrNotRegular.
func TestDirEntriesWithoutDocuments(t *testing.T) {
	dir := t.TempDir()
	d := filepath.Join(dir, "d")
	if err := os.MkdirAll(filepath.Join(d, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, "a.txt"), []byte("alpha"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(d, "pipe"), 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	for link, target := range map[string]string{"ldir": "sub", "lnone": "nowhere", "lpipe": "pipe"} {
		if err := os.Symlink(target, filepath.Join(d, link)); err != nil {
			t.Skipf("no symbolic links here: %v", err)
		}
	}
	none := map[string]bool{}
	docs := 0
	for _, err := range Read(context.Background(), []string{d}, strings.NewReader(""), Options{}) {
		re := (*RecordError)(nil)
		switch {
		case errors.As(err, &re):
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v does not match ErrNotRegular", re.File, err)
			}
			none[filepath.Base(re.File)] = errors.Is(err, ErrNoDocuments)
		case err != nil:
			t.Fatal(err)
		default:
			docs++
		}
	}
	if want := map[string]bool{"ldir": false, "lnone": true, "lpipe": true, "pipe": true}; !maps.Equal(none, want) || docs != 1 {
		t.Errorf("bad records that hold no document: %v, want %v; %d documents, want 1", none, want, docs)
	}
}
