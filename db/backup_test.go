package db

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/lshdb/lshdb/codec"
)

// allDocs returns every stored document by id.
func allDocs(t *testing.T, d *DB) map[string]*StoredDoc {
	t.Helper()
	out := map[string]*StoredDoc{}
	for doc, err := range d.All() {
		if err != nil {
			t.Fatal(err)
		}
		out[doc.ID] = doc
	}
	return out
}

// Ensure that a backup is a complete database holding exactly the
// documents stored when it was made (unsynced writes included), that it
// checks clean, answers queries as the source did, and is untouched by
// later writes to the source.
func TestBackup(t *testing.T) {
	ctx := context.Background()
	for _, storage := range []string{StorageText, StorageSets} {
		t.Run(storage, func(t *testing.T) {
			src := mustOpen(t, filepath.Join(t.TempDir(), "src"), &Options{Storage: storage})
			defer src.Close()
			var docs []Doc
			for i := range 300 {
				docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d about %s, version %d", i, []string{"foxes", "owls", "cats"}[i%3], i%7),
					Meta: []byte{byte(i)}})
			}
			if _, err := src.PutBatch(docs[:200], nil); err != nil {
				t.Fatal(err)
			}
			// NB: unsynced: the backup must still hold them.
			if _, err := src.PutBatch(docs[200:], &WriteOptions{NoSync: true}); err != nil {
				t.Fatal(err)
			}
			if err := src.Delete("d007", nil); err != nil {
				t.Fatal(err)
			}
			want := allDocs(t, src)
			srcInfo, err := src.Info()
			if err != nil {
				t.Fatal(err)
			}
			wantQ, err := src.QueryID(ctx, "d010", &QueryOptions{Threshold: 0.3})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "nested", "copy")
			if err := src.Backup(ctx, dir); err != nil {
				t.Fatal(err)
			}
			// Later writes to the source do not reach the copy.
			if err := src.Put(Doc{ID: "after", Text: "a document stored after the backup"}, nil); err != nil {
				t.Fatal(err)
			}
			if err := src.Delete("d010", nil); err != nil {
				t.Fatal(err)
			}
			cp := mustOpen(t, dir, &Options{MustExist: true})
			defer cp.Close()
			if got := allDocs(t, cp); !reflect.DeepEqual(got, want) {
				t.Errorf("the copy holds %d documents, the source held %d (or they differ)", len(got), len(want))
			}
			if p, q := cp.Params(), src.Params(); !reflect.DeepEqual(p, q) {
				t.Errorf("params %+v, want %+v", p, q)
			}
			// An instance of its own, and the source's state it copied as
			// its origin: the source's Info when the backup was made.
			cpInfo, err := cp.Info()
			if err != nil {
				t.Fatal(err)
			}
			if cp.Instance() == src.Instance() || cp.Instance() == "" || src.Instance() == "" {
				t.Errorf("instance %q, the source's %q: want another, not empty", cp.Instance(), src.Instance())
			}
			if o := cpInfo.Origin; o == nil || *o != (Origin{Instance: src.Instance(), Written: srcInfo.Written, Docs: srcInfo.Docs, Instant: true}) || srcInfo.Docs != 299 {
				t.Errorf("the copy's origin %+v, want the source's instance %s and state %d/%d", o, src.Instance(), srcInfo.Docs, srcInfo.Written)
			}
			if cpInfo.Written != srcInfo.Written || cpInfo.Docs != srcInfo.Docs {
				t.Errorf("the copy holds %d/%d, the source held %d/%d", cpInfo.Docs, cpInfo.Written, srcInfo.Docs, srcInfo.Written)
			}
			if si, _ := src.Info(); si.Origin != nil {
				t.Errorf("the source names an origin: %+v", si.Origin)
			}
			rep, err := cp.Check(ctx)
			if err != nil || !rep.OK() || rep.Docs != len(want) {
				t.Errorf("check of the copy: %+v %v", rep, err)
			}
			gotQ, err := cp.QueryID(ctx, "d010", &QueryOptions{Threshold: 0.3})
			if err != nil || !reflect.DeepEqual(gotQ, wantQ) {
				t.Errorf("query on the copy %+v %v, on the source %+v", gotQ, err, wantQ)
			}
			// The copy is a database of its own: it takes writes.
			if err := cp.Put(Doc{ID: "own", Text: "a write to the copy"}, nil); err != nil {
				t.Fatal(err)
			}
			if ok, _ := src.Has("own"); ok {
				t.Error("a write to the copy reached the source")
			}
		})
	}
}

// Ensure that a backup made while writers run is the state of one
// instant: the documents of a prefix of the writes, each whole, and the
// copy checks clean.
func TestBackupLive(t *testing.T) {
	ctx := context.Background()
	src := mustOpen(t, filepath.Join(t.TempDir(), "src"), &Options{NoSync: true})
	defer src.Close()
	var wg sync.WaitGroup
	var stop atomic.Bool
	var written atomic.Int64
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; !stop.Load() || i < 50; i++ {
			if err := src.Put(Doc{ID: fmt.Sprintf("w%05d", i), Text: fmt.Sprintf("live write number %d of the test", i)}, nil); err != nil {
				t.Error(err)
				return
			}
			written.Store(int64(i + 1))
		}
	}()
	for written.Load() < 20 {
		// NB: waits for some writes before the backup (spins on the
		// counter; the writer makes progress on its own).
		if t.Failed() {
			break
		}
		runtime.Gosched()
	}
	dir := filepath.Join(t.TempDir(), "copy")
	err := src.Backup(ctx, dir)
	stop.Store(true)
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	cp := mustOpen(t, dir, &Options{ReadOnly: true})
	defer cp.Close()
	got := allDocs(t, cp)
	if len(got) < 20 {
		t.Fatalf("the copy holds %d documents, at least 20 were written before it", len(got))
	}
	for i := range len(got) {
		id := fmt.Sprintf("w%05d", i)
		doc, ok := got[id]
		if !ok {
			t.Fatalf("the copy holds %d documents but not %s: not a prefix of the writes", len(got), id)
		}
		if want := fmt.Sprintf("live write number %d of the test", i); doc.Text != want {
			t.Errorf("%s: %q, want %q", id, doc.Text, want)
		}
	}
	rep, err := cp.Check(ctx)
	if err != nil || !rep.OK() {
		t.Errorf("check of the copy: %+v %v", rep, err)
	}
	if n, _ := cp.Count(); n != uint64(len(got)) {
		t.Errorf("the copy counts %d documents and holds %d", n, len(got))
	}
}

// Ensure that a backup refuses a directory that exists, an empty path, a
// symbolic link to nothing, a cancelled context and a closed database.
func TestBackupErrors(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "src")
	src := mustOpen(t, dir, nil)
	src.Put(Doc{ID: "a", Text: "a document to back up"}, nil)
	if err := src.Backup(ctx, t.TempDir()); !errors.Is(err, ErrInvalidOptions) || !errors.Is(err, fs.ErrExist) {
		t.Errorf("an existing directory: %v", err)
	}
	if err := src.Backup(ctx, ""); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("an empty path: %v", err)
	}
	// A place no directory can be made: under a file.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o644)
	if err := src.Backup(ctx, filepath.Join(file, "sub", "copy")); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a path under a file: %v, want ErrInvalidOptions", err)
	}
	// Inside the index: directly, deeper, through a link to it; beside it
	// (a name that starts like it) is fine.
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(dir, link); err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{filepath.Join(dir, "inner"), filepath.Join(dir, "a", "b"), filepath.Join(link, "inner")} {
		if err := src.Backup(ctx, in); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "inside the index") {
			t.Errorf("a backup to %s: %v", in, err)
		}
		if _, err := os.Stat(in); !os.IsNotExist(err) {
			t.Errorf("a refused backup made %s: %v", in, err)
		}
	}
	// A symbolic link to nothing, as the directory or as a parent of it:
	// refused before the copy (it failed after, as an internal error), and
	// nothing made where it points.
	dangling := filepath.Join(t.TempDir(), "dangling")
	target := filepath.Join(t.TempDir(), "gone", "newdir")
	if err := os.Symlink(target, dangling); err != nil {
		t.Fatal(err)
	}
	for _, to := range []string{dangling, filepath.Join(dangling, "sub")} {
		if err := src.Backup(ctx, to); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "symbolic link to nothing") {
			t.Errorf("a backup to %s (a link to nothing): %v, want ErrInvalidOptions", to, err)
		}
	}
	if _, err := os.Lstat(filepath.Dir(target)); !os.IsNotExist(err) {
		t.Errorf("a refused backup made %s: %v", filepath.Dir(target), err)
	}
	beside := dir + "-copy"
	if err := src.Backup(ctx, beside); err != nil {
		t.Errorf("a backup beside the index: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if err := src.Backup(cctx, filepath.Join(t.TempDir(), "x")); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled context: %v", err)
	}
	src.Close()
	if err := src.Backup(ctx, filepath.Join(t.TempDir(), "y")); !errors.Is(err, ErrClosed) {
		t.Errorf("a closed database: %v", err)
	}
}

// Ensure that a read-only handle backs up too (a copy of its files under
// its lock): on a read-only filesystem (a backup on read-only media) and
// on a disk too full to open the index for writing, where copying it off
// is what an operator needs. The copy holds what the source holds, with
// the writes not yet flushed (the log is copied), checks clean, takes
// writes of its own, and leaves no temporary directory; a killed copy's
// is replaced.
func TestBackupReadOnly(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "src")
	src := mustOpen(t, dir, nil)
	var docs []Doc
	for i := range 200 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d about %s, version %d", i, []string{"foxes", "owls", "cats"}[i%3], i%7)})
	}
	if _, err := src.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Delete("d007", nil); err != nil {
		t.Fatal(err)
	}
	want := allDocs(t, src)
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	for _, how := range []string{"read-only handle", "read-only filesystem"} {
		o := &Options{ReadOnly: true}
		if how == "read-only filesystem" {
			o.fs = readOnlyFS{vfs.Default, dir}
		}
		ro := mustOpen(t, dir, o)
		out := t.TempDir()
		copyDir := filepath.Join(out, "copy")
		// A killed backup's directory is replaced.
		if err := os.MkdirAll(filepath.Join(out, ".copy.lshdb-backup.tmp"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := ro.Backup(ctx, copyDir); err != nil {
			t.Fatalf("%s: Backup: %v", how, err)
		}
		if err := ro.Backup(ctx, copyDir); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%s: a second backup to the same directory: %v, want ErrInvalidOptions", how, err)
		}
		ro.Close()
		if ents, _ := os.ReadDir(out); len(ents) != 1 || ents[0].Name() != "copy" {
			t.Errorf("%s: beside the copy: %v, want only it", how, ents)
		}
		cp := mustOpen(t, copyDir, &Options{MustExist: true})
		if got := allDocs(t, cp); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the copy holds %d documents, the source %d (or they differ)", how, len(got), len(want))
		}
		if ci, err := cp.Info(); err != nil || ci.Origin == nil || *ci.Origin != (Origin{Instance: ro.Instance(), Written: 200, Docs: 199, Instant: true}) || cp.Instance() == ro.Instance() {
			t.Errorf("%s: the copy's instance %s and origin %+v (%v), want another instance and origin %s at 199/200", how, cp.Instance(), ci.Origin, err, ro.Instance())
		}
		if rep, err := cp.Check(ctx); err != nil || !rep.OK() {
			t.Errorf("%s: check of the copy: %+v %v", how, rep, err)
		}
		if err := cp.Put(Doc{ID: "own", Text: "a write to the copy"}, nil); err != nil {
			t.Errorf("%s: a write to the copy: %v", how, err)
		}
		cp.Close()
	}
	// A copy that does not fit is refused before it starts, and leaves
	// nothing.
	mem := vfs.NewMem()
	m := mustOpen(t, "src", &Options{fs: mem})
	if _, err := m.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	m.Close()
	used := int64(dirBytes(mem, "src"))
	ro := mustOpen(t, "src", &Options{fs: quotaFS{FS: mem, root: "src", capacity: used + 1000}, ReadOnly: true})
	defer ro.Close()
	if err := ro.Backup(ctx, "copy"); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a copy of %d bytes with 1,000 free: %v, want ErrDiskFull", used, err)
	}
	for _, n := range []string{"copy", ".copy.lshdb-backup.tmp"} {
		if _, err := mem.Stat(n); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a refused copy left %s: %v", n, err)
		}
	}
}

// Ensure that two backups to the same directory at once (a retried
// request) make one good copy and refuse the other: they shared the
// copy's temporary directory, and one could return nil on a copy that
// did not open.
func TestBackupTwiceAtOnce(t *testing.T) {
	ctx := context.Background()
	src := mustOpen(t, filepath.Join(t.TempDir(), "src"), &Options{NoSync: true})
	defer src.Close()
	var docs []Doc
	for i := range 500 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("document %d about %s, version %d", i, []string{"foxes", "owls", "cats"}[i%3], i%7)})
	}
	if _, err := src.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	for round := range 10 {
		dir := filepath.Join(t.TempDir(), "copy")
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- src.Backup(ctx, dir) }()
		}
		e1, e2 := <-errs, <-errs
		if (e1 == nil) == (e2 == nil) || !errors.Is(cmp.Or(e1, e2), ErrInvalidOptions) {
			t.Fatalf("round %d: two backups to one directory: %v and %v, want one nil and one ErrInvalidOptions", round, e1, e2)
		}
		cp := mustOpen(t, dir, &Options{MustExist: true, ReadOnly: true})
		if rep, err := cp.Check(ctx); err != nil || !rep.OK() || rep.Docs != len(docs) {
			t.Fatalf("round %d: the copy: %+v %v", round, rep, err)
		}
		cp.Close()
		if ents, _ := os.ReadDir(filepath.Dir(dir)); len(ents) != 1 {
			t.Fatalf("round %d: %d entries beside the copy", round, len(ents))
		}
	}
}

// Ensure that the backup of an empty index names an instant of it (0
// documents of 0 written), not "no instant" as a Redis index's copy does.
func TestBackupOfAnEmptyIndex(t *testing.T) {
	src := mustOpen(t, filepath.Join(t.TempDir(), "src"), nil)
	defer src.Close()
	dir := filepath.Join(t.TempDir(), "copy")
	if err := src.Backup(context.Background(), dir); err != nil {
		t.Fatal(err)
	}
	cp := mustOpen(t, dir, &Options{MustExist: true})
	defer cp.Close()
	ci, err := cp.Info()
	if err != nil || ci.Origin == nil || *ci.Origin != (Origin{Instance: src.Instance(), Instant: true}) {
		t.Fatalf("the empty index's copy: origin %+v (%v), want the source's instance at an instant", ci.Origin, err)
	}
}

// Ensure that a backup removes from its parent directory what a killed
// backup left under another name (its temporary copy and owner file),
// once that backup's process is gone, and leaves one whose process runs
// (another backup under way), one of another host, and one without an
// owner file; and that its own temporary directory and owner file are
// gone when it is done.
func TestBackupSweepsKilledBackups(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no signal 0 to tell a process runs")
	}
	parent := t.TempDir()
	d := mustOpen(t, filepath.Join(t.TempDir(), "src"), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document to back up"}, nil); err != nil {
		t.Fatal(err)
	}
	// A process that has ended: its pid is gone.
	gone := exec.Command(os.Args[0], "-test.run=^$")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	leave := func(name, owner string) string {
		tmp := filepath.Join(parent, "."+name+backupTempSuffix)
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, "000004.sst"), []byte("a table's hard link"), 0o644); err != nil {
			t.Fatal(err)
		}
		if owner != "" {
			if err := os.WriteFile(tmp+backupOwnerSuffix, []byte(owner), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return tmp
	}
	killed := leave("2026-11-26", fmt.Sprintf("%d %s\n", gone.Process.Pid, host))
	running := leave("2026-11-27", fmt.Sprintf("%d %s\n", os.Getppid(), host))
	holdOwner(t, running+backupOwnerSuffix) // NB: a live backup holds its owner file's lock
	elsewhere := leave("2026-11-25", fmt.Sprintf("%d %s-other\n", gone.Process.Pid, host))
	unowned := leave("2026-11-24", "")
	if err := d.Backup(context.Background(), filepath.Join(parent, "2026-11-28")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{killed, killed + backupOwnerSuffix} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v; want it removed (its backup's process is gone)", filepath.Base(p), err)
		}
	}
	for _, p := range []string{running, running + backupOwnerSuffix, elsewhere, elsewhere + backupOwnerSuffix, unowned} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v; want it left", filepath.Base(p), err)
		}
	}
	names, _ := os.ReadDir(parent)
	for _, n := range names {
		if strings.HasPrefix(n.Name(), ".2026-11-28") {
			t.Errorf("the backup left %s", n.Name())
		}
	}
	b := mustOpen(t, filepath.Join(parent, "2026-11-28"), &Options{ReadOnly: true})
	defer b.Close()
	if n, err := b.Count(); err != nil || n != 1 {
		t.Fatalf("the backup holds %d documents (%v)", n, err)
	}
}

// Ensure that BackupOptions.Copy gives the copy no file that is the
// index's (os.SameFile against each of the index's files), with the same
// documents, and that a backup stopped while it copies leaves nothing
// under its name: neither when its context ends nor when its process is
// killed (a copy that opened and checked clean while some of its tables
// were still the index's files, once, when the links were replaced after
// the rename).
func TestBackupCopy(t *testing.T) {
	backupChild(t, &backupCopyHook, BackupOptions{Copy: true}) // killed as it copies a table
	ctx := context.Background()
	root := t.TempDir()
	src := mustOpen(t, filepath.Join(root, "idx"), nil)
	var docs []Doc
	for i := range 400 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("a document numbered %d about %s", i, []string{"foxes", "owls"}[i%2])})
	}
	if _, err := src.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Compact(ctx); err != nil { // NB: tables to link
		t.Fatal(err)
	}
	want := allDocs(t, src)
	shared := func(bk string) (n int) {
		ents, _ := os.ReadDir(bk)
		for _, e := range ents {
			b, err1 := os.Stat(filepath.Join(bk, e.Name()))
			o, err2 := os.Stat(filepath.Join(src.Dir(), e.Name()))
			if err1 == nil && err2 == nil && os.SameFile(o, b) {
				n++
			}
		}
		return n
	}
	linked := filepath.Join(root, "linked")
	if err := src.Backup(ctx, linked); err != nil {
		t.Fatal(err)
	}
	if shared(linked) == 0 {
		t.Skip("a backup on this filesystem shares no file with the index: no hard links here")
	}
	own := filepath.Join(root, "own")
	if err := src.BackupWith(ctx, own, BackupOptions{Copy: true}); err != nil {
		t.Fatal(err)
	}
	if n := shared(own); n != 0 {
		t.Errorf("the copy shares %d files with the index", n)
	}
	cp := mustOpen(t, own, &Options{ReadOnly: true})
	if got := allDocs(t, cp); !reflect.DeepEqual(got, want) {
		t.Errorf("the copy holds %d documents, the index %d (or they differ)", len(got), len(want))
	}
	cp.Close()

	absent := func(name string) {
		t.Helper()
		ents, _ := os.ReadDir(root)
		for _, e := range ents {
			if e.Name() == name {
				t.Errorf("a stopped backup left %s", name)
			}
		}
	}
	// Its context ends while it copies: an error, and nothing left.
	cctx, cancel := context.WithCancel(ctx)
	backupCopyHook = func(string) { cancel() }
	err := src.BackupWith(cctx, filepath.Join(root, "canceled"), BackupOptions{Copy: true})
	backupCopyHook = nil
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a backup canceled as it copies: %v, want context.Canceled", err)
	}
	absent("canceled")
	absent(".canceled" + backupTempSuffix)

	// Killed as it copies: no directory of its name (its temporary one is
	// the next backup's to remove).
	src.Close()
	killBackupChild(t, root)
	absent("killed")
	src = mustOpen(t, filepath.Join(root, "idx"), nil)
	defer src.Close()
	if got := allDocs(t, src); !reflect.DeepEqual(got, want) {
		t.Errorf("the index holds %d documents after a killed backup, want %d", len(got), len(want))
	}
	if err := src.BackupWith(ctx, filepath.Join(root, "after"), BackupOptions{Copy: true}); err != nil {
		t.Fatal(err)
	}
	absent(".killed" + backupTempSuffix)
}

// backupChild is the child process of killBackupChild, when the test
// runs as one: it backs up DIR/idx into DIR/killed with o and kills
// itself at the first call of *hook.
func backupChild(t *testing.T, hook *func(string), o BackupOptions) {
	dir := os.Getenv("LSHDB_BACKUP_KILL")
	if dir == "" {
		return
	}
	d := mustOpen(t, filepath.Join(dir, "idx"), &Options{MustExist: true})
	*hook = func(string) {
		p, _ := os.FindProcess(os.Getpid())
		p.Kill()
		select {}
	}
	err := d.BackupWith(context.Background(), filepath.Join(dir, "killed"), o)
	t.Fatalf("the backup was not killed: %v", err)
}

// killBackupChild runs the calling test again in a child process
// (backupChild), which backs up root/idx (closed) into root/killed and is
// killed mid-way, and fails the test unless it was.
func killBackupChild(t *testing.T, root string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$")
	cmd.Env = append(os.Environ(), "LSHDB_BACKUP_KILL="+root)
	out, err := cmd.CombinedOutput()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != -1 {
		t.Fatalf("the child was not killed: %v\n%s", err, out)
	}
}

// Ensure that a backup with files of its own (Copy), a whole copy of the
// store, is refused with ErrDiskFull without room for it beyond the
// reserve, and leaves nothing (it checked nothing, where a read-only
// handle's copy did); a plain backup, which links, is not.
func TestBackupCopyNeedsRoom(t *testing.T) {
	fs := vfs.NewMem()
	d := mustOpen(t, "src", &Options{fs: fs, DiskReserve: 8 << 20})
	defer d.Close()
	for i := range 300 {
		if err := d.Put(Doc{ID: fmt.Sprint("d", i), Text: fmt.Sprintf("document %d of the store, with words enough", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	store := int64(dirBytes(fs, "src"))
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + store/4), TotalBytes: 1 << 30})
	if err := d.BackupWith(context.Background(), "copy", BackupOptions{Copy: true}); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("a copy with a quarter of the store free beyond the reserve: %v, want ErrDiskFull", err)
	}
	if _, err := fs.Stat("copy"); err == nil {
		t.Fatal("a refused copy left its directory")
	}
	if err := d.Backup(context.Background(), "linked"); err != nil {
		t.Fatalf("a plain backup with the same room: %v", err)
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + 2*store), TotalBytes: 1 << 30})
	if err := d.BackupWith(context.Background(), "copy", BackupOptions{Copy: true}); err != nil {
		t.Fatalf("a copy with room for it: %v", err)
	}
	// NB: a read-only handle's copy (the CLI's, of an index not served),
	// on the index's own disk, leaves it its reserve too: it took the
	// disk below it (a crash-safety review).
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	ro := mustOpen(t, "src", &Options{fs: fs, ReadOnly: true, DiskReserve: 8 << 20})
	defer ro.Close()
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + store/4), TotalBytes: 1 << 30})
	if err := ro.BackupWith(context.Background(), "copy2", BackupOptions{Copy: true}); !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "in reserve") {
		t.Fatalf("a read-only handle's copy with a quarter of the store free beyond the reserve: %v, want ErrDiskFull naming the reserve", err)
	}
	if _, err := fs.Stat("copy2"); err == nil {
		t.Fatal("a refused copy left its directory")
	}
	fs.TestingSetDiskUsage(vfs.DiskUsage{AvailBytes: uint64(8<<20 + 2*store), TotalBytes: 1 << 30})
	if err := ro.BackupWith(context.Background(), "copy2", BackupOptions{Copy: true}); err != nil {
		t.Fatalf("a read-only handle's copy with room for it: %v", err)
	}
}

// Ensure that a verified backup (BackupOptions.Verify) is checked before
// it gets its name: a backup killed or stopped while it verifies leaves
// nothing under dir (a review: verified after the rename, a killed
// backup left a complete, unverified copy there), one of a damaged index
// fails with ErrCorrupt and is moved to dir.damaged, and one of a sound
// index is the index's documents. The oracles: the directory listing at
// the hook and after, a child process killed at the hook, bytes
// overwritten in a table by hand, and the documents read back.
func TestBackupVerify(t *testing.T) {
	backupChild(t, &backupVerifyHook, BackupOptions{Verify: true}) // killed as it verifies the copy
	ctx := context.Background()
	root := t.TempDir()
	src := mustOpen(t, filepath.Join(root, "idx"), nil)
	var docs []Doc
	for i := range 400 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("a document numbered %d about %s", i, []string{"foxes", "owls"}[i%2])})
	}
	if _, err := src.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	want := allDocs(t, src)
	exists := func(name string) bool {
		_, err := os.Stat(filepath.Join(root, name))
		return err == nil
	}

	// Sound: the copy is not under its name while it is verified.
	var named, tmpThere bool
	backupVerifyHook = func(tmp string) {
		named = exists("good")
		_, err := os.Stat(tmp)
		tmpThere = err == nil
	}
	err := src.BackupWith(ctx, filepath.Join(root, "good"), BackupOptions{Verify: true})
	backupVerifyHook = nil
	if err != nil {
		t.Fatal(err)
	}
	if named || !tmpThere {
		t.Errorf("as it was verified, the copy was under its name: %v; in its temporary directory: %v", named, tmpThere)
	}
	cp := mustOpen(t, filepath.Join(root, "good"), &Options{ReadOnly: true})
	if got := allDocs(t, cp); !reflect.DeepEqual(got, want) {
		t.Errorf("the verified copy holds %d documents, the index %d (or they differ)", len(got), len(want))
	}
	cp.Close()

	// Its context ends as it verifies: an error, and nothing left.
	cctx, cancel := context.WithCancel(ctx)
	backupVerifyHook = func(string) { cancel() }
	err = src.BackupWith(cctx, filepath.Join(root, "canceled"), BackupOptions{Verify: true})
	backupVerifyHook = nil
	if !errors.Is(err, context.Canceled) {
		t.Errorf("a backup canceled as it verifies: %v, want context.Canceled", err)
	}
	for _, n := range []string{"canceled", ".canceled" + backupTempSuffix, "canceled.damaged"} {
		if exists(n) {
			t.Errorf("a backup canceled as it verifies left %s", n)
		}
	}

	// Close as it verifies: ErrClosed at once, and nothing left (Close
	// waited for the whole verification).
	closed := make(chan error, 1)
	backupVerifyHook = func(string) {
		go func() { closed <- src.Close() }()
		time.Sleep(300 * time.Millisecond) // NB: Close cancels before it waits for the backup
	}
	err = src.BackupWith(ctx, filepath.Join(root, "closed"), BackupOptions{Verify: true})
	backupVerifyHook = nil
	if !errors.Is(err, ErrClosed) {
		t.Errorf("a backup closed as it verifies: %v, want ErrClosed", err)
	}
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"closed", ".closed" + backupTempSuffix, "closed.damaged"} {
		if exists(n) {
			t.Errorf("a backup closed as it verifies left %s", n)
		}
	}

	// A read-only handle's copy (file by file) is verified too.
	ro := mustOpen(t, filepath.Join(root, "idx"), &Options{ReadOnly: true})
	if err := ro.BackupWith(ctx, filepath.Join(root, "ro"), BackupOptions{Verify: true}); err != nil {
		t.Errorf("a read-only handle's verified backup: %v", err)
	}
	ro.Close()

	// Killed as it verifies: nothing under its name.
	killBackupChild(t, root)
	if exists("killed") {
		t.Error("a backup killed as it verified left a copy under its name")
	}

	// Damaged: bytes of the biggest table overwritten. The plain backup
	// does not notice; a verified one fails, twice, each copy moved aside.
	damageBiggestTable(t, filepath.Join(root, "idx"))
	src = mustOpen(t, filepath.Join(root, "idx"), &Options{MustExist: true})
	defer src.Close()
	if err := src.Backup(ctx, filepath.Join(root, "plain")); err != nil {
		t.Fatalf("a plain backup of the damaged index: %v (the test expects it not to read the tables)", err)
	}
	for _, moved := range []string{"checked.damaged", "checked.damaged-2"} {
		err := src.BackupWith(ctx, filepath.Join(root, "checked"), BackupOptions{Verify: true})
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), moved) {
			t.Errorf("a verified backup of a damaged index: %v, want ErrCorrupt naming %s", err, moved)
		}
		if exists("checked") || !exists(moved) {
			t.Errorf("after a failed verification: under its name %v, at %s %v", exists("checked"), moved, exists(moved))
		}
	}
}

// Ensure that a backup's directory has the index directory's permissions
// for the group and others: a backup of an index kept in a directory of
// mode 0700 was one of mode 0755, its tables hard links readable by
// anyone (a security review). The oracle: the mode of each kind of
// backup's directory, against the index's.
func TestBackupKeepsTheDirectoryMode(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "src")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a private text, for the owner's eyes"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o710); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	check := func(what, p string) {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil || fi.Mode().Perm() != 0o710 {
			t.Errorf("%s: the backup's directory %v (%v), want mode 0710 as the index's", what, fi.Mode(), err)
		}
	}
	for _, o := range []BackupOptions{{}, {Copy: true}, {Verify: true}} {
		p := filepath.Join(out, fmt.Sprintf("copy%v%v", o.Copy, o.Verify))
		if err := d.BackupWith(ctx, p, o); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("%+v", o), p)
	}
	d.Close()
	ro := mustOpen(t, dir, &Options{ReadOnly: true})
	defer ro.Close()
	p := filepath.Join(out, "readonly")
	if err := ro.Backup(ctx, p); err != nil {
		t.Fatal(err)
	}
	check("a read-only handle's", p)
}

// Ensure that a backup to a directory that another live backup is making
// is refused with ErrLocked, leaving that backup's work alone: it removed
// the other's temporary directory, which failed it with a raw "no such
// file" (an operator's review); and that a dead backup's is replaced. The
// oracle: the other's file, still there, and the backup after its owner
// is gone.
func TestBackupToTheSameDirectoryAtOnce(t *testing.T) {
	ctx := context.Background()
	d := mustOpen(t, filepath.Join(t.TempDir(), "src"), nil)
	defer d.Close()
	if err := d.Put(Doc{ID: "a", Text: "a document to back up twice at once"}, nil); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	dst := filepath.Join(out, "same")
	tmp := filepath.Join(out, ".same"+backupTempSuffix)
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "000001.sst"), []byte("the other backup's"), 0o644); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	owner := tmp + backupOwnerSuffix
	// NB: a live backup, whose lock on its owner file is held (here by
	// this process, through another open file).
	if err := os.WriteFile(owner, []byte("4242 "+host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlock := holdOwner(t, owner)
	err := d.Backup(ctx, dst)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "another backup to "+dst+" is under way (pid 4242)") {
		t.Fatalf("a backup beside another's under way: %v, want ErrLocked naming it", err)
	}
	if b, err := os.ReadFile(filepath.Join(tmp, "000001.sst")); err != nil || string(b) != "the other backup's" {
		t.Fatalf("the other backup's file after: %q %v", b, err)
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("the refused backup made %s: %v", dst, err)
	}
	// Its lock released (its process ended), the directory is a dead
	// backup's: replaced, even where the pid it names runs (this
	// process's own: PID 1 in a container, the same after a restart,
	// made a killed backup's owner file refuse every later backup for
	// good: a maintainer's review).
	unlock()
	if err := os.WriteFile(owner, []byte(fmt.Sprintf("%d %s\n", os.Getpid(), host)), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := d.Backup(ctx, dst); err != nil {
		t.Fatalf("a backup beside a dead one's: %v", err)
	}
	c := mustOpen(t, dst, &Options{ReadOnly: true})
	defer c.Close()
	if n, err := c.Count(); err != nil || n != 1 {
		t.Fatalf("the backup holds %d documents (%v), want 1", n, err)
	}
}

// Ensure that of backups to one directory started at once, from two
// indexes, each either completes or is refused with ErrLocked, and that
// what is left under the name opens with one index's documents: two took
// the same temporary directory, and one's failure removed the other's
// copy while Pebble had it open, a fatal error (a maintainer's review).
func TestBackupsToOneDirectoryRace(t *testing.T) {
	ctx := context.Background()
	var ds [2]*DB
	for i := range ds {
		ds[i] = mustOpen(t, filepath.Join(t.TempDir(), "src"), nil)
		defer ds[i].Close()
		for j := range i + 1 {
			if err := ds[i].Put(Doc{ID: fmt.Sprint("d", j), Text: fmt.Sprintf("document %d of index %d", j, i)}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := range 20 {
		dst := filepath.Join(t.TempDir(), "same")
		var wg sync.WaitGroup
		var errs [2]error
		for i := range ds {
			wg.Add(1)
			go func() { defer wg.Done(); errs[i] = ds[i].Backup(ctx, dst) }()
		}
		wg.Wait()
		ok := 0
		for _, err := range errs {
			switch {
			case err == nil:
				ok++
			case errors.Is(err, ErrLocked), errors.Is(err, ErrInvalidOptions):
				// refused: another under way, or dst made by the other
			default:
				t.Fatalf("round %d: %v", round, err)
			}
		}
		if ok == 0 {
			t.Fatalf("round %d: no backup completed: %v", round, errs)
		}
		c := mustOpen(t, dst, &Options{ReadOnly: true})
		n, err := c.Count()
		c.Close()
		if err != nil || n < 1 || n > 2 {
			t.Fatalf("round %d: the copy holds %d documents (%v)", round, n, err)
		}
	}
}

// Ensure that a backup to another filesystem, where the checkpoint copies
// every table, is refused before it writes when that filesystem has not
// room for the store (ErrDiskFull, naming it), where it filled the target
// to its last byte and then failed (an SRE's SR7); the same backup to the
// index's own filesystem, whose tables are linked, is not. The oracle:
// the refusal, nothing written where the copy would go, and the copy made
// once the target is said to have room.
func TestBackupToAnotherFilesystemNeedsRoom(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	src := mustOpen(t, filepath.Join(root, "idx"), nil)
	defer src.Close()
	var docs []Doc
	for i := range 200 {
		docs = append(docs, Doc{ID: fmt.Sprintf("d%03d", i), Text: fmt.Sprintf("a document numbered %d about %s", i, []string{"foxes", "owls"}[i%2])})
	}
	if _, err := src.PutBatch(docs, nil); err != nil {
		t.Fatal(err)
	}
	if err := src.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	defer func(f func(a, b string) bool) { onOtherDevice = f }(onOtherDevice)
	out := filepath.Join(t.TempDir(), "bk")
	// The target's filesystem: told to be another, its free space read as
	// it is (far more than the store's) and then as too little.
	onOtherDevice = func(a, b string) bool { return true }
	if u, err := vfs.Default.GetDiskUsage(filepath.Dir(out)); err != nil || u.AvailBytes < 1<<30 {
		t.Skipf("the test's directory has %v free (%v): too little to tell", u.AvailBytes, err)
	}
	if err := src.Backup(ctx, out); err != nil {
		t.Fatalf("a backup to another filesystem with room: %v", err)
	}
	full := filepath.Join(t.TempDir(), "full")
	os.MkdirAll(full, 0o755)
	defer func(f func(string) (int64, error)) { backupTargetFree = f }(backupTargetFree)
	backupTargetFree = func(string) (int64, error) { return 1000, nil }
	err := src.Backup(ctx, filepath.Join(full, "bk"))
	if !errors.Is(err, ErrDiskFull) || !strings.Contains(err.Error(), "another filesystem") {
		t.Errorf("a backup to another filesystem without room: %v, want ErrDiskFull", err)
	}
	if names, _ := os.ReadDir(full); len(names) != 0 {
		t.Errorf("a refused backup wrote %v", names)
	}
	onOtherDevice = func(a, b string) bool { return false }
	if err := src.Backup(ctx, filepath.Join(full, "bk")); err != nil {
		t.Errorf("a backup on the index's own filesystem: %v", err)
	}
}

// damageBiggestTable overwrites 8 bytes in the middle of the largest
// table of the index in dir, a data block's, which only a read of the
// whole table (Check, a verified backup or restore) notices.
func damageBiggestTable(t *testing.T, dir string) {
	t.Helper()
	var biggest string
	var size int64
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if fi, err := e.Info(); err == nil && strings.HasSuffix(e.Name(), ".sst") && fi.Size() > size {
			biggest, size = filepath.Join(dir, e.Name()), fi.Size()
		}
	}
	if biggest == "" {
		t.Fatalf("%s has no table to damage", dir)
	}
	f, err := os.OpenFile(biggest, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("\xff\xff\xff\xff\xff\xff\xff\xff"), size/2); err != nil {
		t.Fatal(err)
	}
}

// Ensure that the copy a restore killed while it copied left hidden
// beside the index is named by Info (RestoreCopy, with its size) and
// removed by the index's next writable Open, where only the next restore
// removed it and nothing named it (an operator's review, OP-2); a
// read-only Open leaves it, and so does a writable one while the copy's
// owner file is held (a restore under way). Oracle: the files on disk.
func TestStoppedRestoreCopyNamedAndRemoved(t *testing.T) {
	parent := t.TempDir()
	dir := filepath.Join(parent, "idx")
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "the index a restore was copying a backup into"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(parent, ".idx"+restoreStaging+backupTempSuffix) // NB: by hand, not backupTempOf: the name the README gives
	owner := tmp + backupOwnerSuffix
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "000001.sst"), make([]byte, 100_000), 0o644); err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	if err := os.WriteFile(owner, []byte("4242 "+host+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	info := func(o *Options) *Info {
		t.Helper()
		d := mustOpen(t, dir, o)
		defer d.Close()
		in, err := d.Info()
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	// Beside an absent index, its ErrNotExist names the copy (RT-6).
	if _, err := Open(filepath.Join(parent, "absent"), &Options{MustExist: true}); !errors.Is(err, ErrNotExist) || strings.Contains(err.Error(), "restore") {
		t.Fatalf("an absent index without a copy beside it: %v", err)
	}
	aside := filepath.Join(parent, ".absent"+restoreStaging+backupTempSuffix)
	if err := os.Mkdir(aside, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(filepath.Join(parent, "absent"), &Options{MustExist: true}); !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "a restore into it is copying its backup, or was stopped while it did: "+aside) {
		t.Fatalf("an absent index beside a restore's copy: %v", err)
	}
	unlock := holdOwner(t, owner)
	for _, o := range []*Options{{ReadOnly: true}, nil} {
		if in := info(o); in.RestoreCopy != tmp || in.RestoreCopyBytes < 100_000 {
			t.Fatalf("Info (read-only %v) beside a restore's copy: %q of %d bytes, want %s", o != nil, in.RestoreCopy, in.RestoreCopyBytes, tmp)
		}
	}
	unlock()
	if in := info(&Options{ReadOnly: true}); in.RestoreCopy != tmp {
		t.Fatalf("a read-only Info beside a stopped restore's copy: %q, want %s", in.RestoreCopy, tmp)
	}
	if in := info(nil); in.RestoreCopy != "" {
		t.Fatalf("a writable Open left the stopped restore's copy: %q", in.RestoreCopy)
	}
	for _, p := range []string{tmp, owner} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s after a writable Open: %v", p, err)
		}
	}
	if in := info(&Options{ReadOnly: true}); in.Docs != 1 {
		t.Fatalf("the index holds %d documents, want 1", in.Docs)
	}
}

// Ensure that what a Drop stopped after its rename left (dir.dropped-N,
// the dropped index) is named by Open's ErrNotExist of dir, read-only or
// not, and removed when an index is made at dir again, where it stayed
// beside the new index unsaid (an operator's review, OP-1), and said so
// in the log (a read-through's RT-5); a tomb that
// holds a file no index has, or whose lock is held (a Drop running), is
// left. Oracle: the directories on disk.
func TestStoppedDropNamedAndFinished(t *testing.T) {
	dir := t.TempDir() + "/idx"
	d := mustOpen(t, dir, nil)
	if err := d.Put(Doc{ID: "a", Text: "a document of the index that was dropped"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	tomb := dir + tombPrefix + "77"
	if err := os.Rename(dir, tomb); err != nil {
		t.Fatal(err)
	}
	for _, o := range []*Options{{MustExist: true}, {ReadOnly: true}} {
		_, err := Open(dir, o)
		if !errors.Is(err, ErrNotExist) || !strings.Contains(err.Error(), "a drop of it was stopped: "+tomb+", ") || !strings.Contains(err.Error(), "renamed back to "+dir+" is the index again") {
			t.Fatalf("Open (MustExist %v, ReadOnly %v) beside a stopped drop's directory: %v", o.MustExist, o.ReadOnly, err)
		}
	}
	running := mustOpen(t, dir+tombPrefix+"78", nil) // a Drop that still holds its tomb
	foreign := dir + tombPrefix + "79"
	if err := os.Mkdir(foreign, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(foreign+"/notes.txt", []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	var logged syncBuffer
	d = mustOpen(t, dir, &Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	defer d.Close()
	if !strings.Contains(logged.String(), "removed "+tomb+", what a drop of "+dir+" that was stopped left") {
		t.Errorf("making the index again logged:\n%s", logged.String())
	}
	if n, err := d.Count(); n != 0 || err != nil {
		t.Fatalf("the index made again holds %d documents (%v)", n, err)
	}
	if _, err := os.Stat(tomb); !os.IsNotExist(err) {
		t.Errorf("the stopped drop's directory is left beside the new index: %v", err)
	}
	for _, keep := range []string{dir + tombPrefix + "78", foreign + "/notes.txt"} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s: %v", keep, err)
		}
	}
	running.Close()
}

// Ensure that a backup's stamp (a file beside its store: its own instance
// and its origin) is read by every Open, left by a read-only one, and
// folded into the manifest record and removed by the first Open that may
// write; that a stamp left after it was folded (an Open killed between
// the two) is only removed; and that a damaged stamp is refused as
// ErrCorrupt naming the file, with the documents untouched. The oracles:
// the manifest record read by a Pebble of the test's own, and the files.
func TestBackupStampFolded(t *testing.T) {
	root := t.TempDir()
	d := mustOpen(t, filepath.Join(root, "idx"), nil)
	acked := putSome(t, d, "doc", 20)
	bk := filepath.Join(root, "bk")
	if err := d.Backup(context.Background(), bk); err != nil {
		t.Fatal(err)
	}
	stampPath := filepath.Join(bk, codec.BackupStampFile)
	stamp, err := os.ReadFile(stampPath)
	if err != nil {
		t.Fatalf("the backup has no stamp file: %v", err)
	}
	stored := func() *codec.Manifest { return storedManifest(t, bk) } // the manifest record itself
	instanceOf := func(o *Options) string {
		t.Helper()
		b, err := Open(bk, o)
		if err != nil {
			t.Fatal(err)
		}
		defer b.Close()
		info, err := b.Info()
		if err != nil || info.Origin == nil || info.Origin.Instance != d.Instance() || info.Origin.Docs != 20 || !info.Origin.Instant {
			t.Errorf("the backup's origin %+v (%v), want %s at 20 documents", info.Origin, err, d.Instance())
		}
		for id, text := range acked {
			if doc, err := b.Get(id); err != nil || doc.Text != text {
				t.Errorf("%s in the backup: %v", id, err)
			}
		}
		return b.Instance()
	}

	ro := &Options{ReadOnly: true, MustExist: true}
	first := instanceOf(ro)
	if first == d.Instance() || first == "" || instanceOf(ro) != first {
		t.Fatalf("read-only opens of the backup: instance %q, then %q; the original's %q", first, instanceOf(ro), d.Instance())
	}
	if m := stored(); m.Instance != d.Instance() || m.Origin != "" {
		t.Errorf("a read-only open wrote the stamp: the record has instance %q, origin %q", m.Instance, m.Origin)
	}
	if _, err := os.Stat(stampPath); err != nil {
		t.Errorf("a read-only open removed the stamp: %v", err)
	}
	if present, err := indexPresent(bk); !present || err != nil {
		t.Errorf("a backup with its stamp, as restore and drop see it: present %v, %v; want an index", present, err)
	}

	if got := instanceOf(&Options{MustExist: true}); got != first {
		t.Errorf("the writable open's instance %q, the read-only's %q", got, first)
	}
	if _, err := os.Stat(stampPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stamp is left after a writable open: %v", err)
	}
	if m := stored(); m.Instance != first || m.Origin != d.Instance() || m.OriginDocs != 20 || m.OriginWritten != 20 || !m.OriginInstant {
		t.Errorf("the folded record: %+v, want instance %s and origin %s at 20", m, first, d.Instance())
	}
	if got := instanceOf(ro); got != first {
		t.Errorf("after the fold: instance %q, want %q", got, first)
	}

	// Killed between the fold and the removal: the stamp is there again.
	if err := os.WriteFile(stampPath, stamp, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := instanceOf(&Options{MustExist: true}); got != first {
		t.Errorf("a stamp folded already, opened again: instance %q, want %q", got, first)
	}
	if _, err := os.Stat(stampPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a stamp folded already is left: %v", err)
	}

	// Damaged: refused by a read-only open, naming the file; nothing
	// changed.
	bad := append([]byte(nil), stamp...)
	bad[len(bad)-1] ^= 0xff
	if err := os.WriteFile(stampPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(bk, ro); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), stampPath) || !strings.Contains(err.Error(), "check --repair") || !Advised(err) || Repairable(err) {
		t.Errorf("read-only open of a backup with a damaged stamp: %v, want ErrCorrupt naming %s and check --repair, Advised and not Repairable", err, stampPath)
	}
	if m := stored(); m.Instance != first {
		t.Errorf("a read-only open changed the record: %+v", m)
	}
	damagedStampTakesANewInstance(t, bk, stampPath, bad, []string{d.Instance(), first}, acked)

	// A backup never opened to write, whose stamp is damaged: removing
	// the file, as the error said before, opened it with its original's
	// instance (a read-through, RT9-3). A writable open gives it one of
	// its own.
	bk2 := filepath.Join(root, "bk2")
	if err := d.Backup(context.Background(), bk2); err != nil {
		t.Fatal(err)
	}
	stamp2 := filepath.Join(bk2, codec.BackupStampFile)
	raw, err := os.ReadFile(stamp2)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)/2] ^= 0x55
	damagedStampTakesANewInstance(t, bk2, stamp2, raw, []string{d.Instance(), first}, acked)
}

// damagedStampTakesANewInstance writes bad as the stamp of the index at
// dir, opens it to write and checks that it takes an instance none of
// taken, with no origin, in its stored manifest (read by a Pebble of the
// test's own) and in a reopen, removes the stamp, warns, and keeps every
// document of acked.
func damagedStampTakesANewInstance(t *testing.T, dir, stampPath string, bad []byte, taken []string, acked map[string]string) {
	t.Helper()
	if err := os.WriteFile(stampPath, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	var logged strings.Builder
	w, err := Open(dir, &Options{MustExist: true, Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	if err != nil {
		t.Fatalf("a writable open with a damaged stamp: %v", err)
	}
	inst := w.Instance()
	w.Close()
	if inst == "" || slices.Contains(taken, inst) {
		t.Errorf("a damaged stamp: instance %q, one of %q", inst, taken)
	}
	if !strings.Contains(logged.String(), "backup stamp is damaged") {
		t.Errorf("no warning of the damaged stamp: %q", logged.String())
	}
	if _, err := os.Stat(stampPath); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the damaged stamp is left: %v", err)
	}
	if m := storedManifest(t, dir); m.Instance != inst || m.Origin != "" || m.OriginInstant || m.OriginDocs != 0 || m.OriginWritten != 0 {
		t.Errorf("the stored manifest: %+v, want instance %s and no origin", m, inst)
	}
	r, err := Open(dir, &Options{ReadOnly: true, MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if info, err := r.Info(); err != nil || r.Instance() != inst || info.Origin != nil {
		t.Errorf("reopened: instance %q, origin %+v (%v); want %q and none", r.Instance(), info.Origin, err, inst)
	}
	for id, text := range acked {
		if doc, err := r.Get(id); err != nil || doc.Text != text {
			t.Errorf("%s after the new instance: %v", id, err)
		}
	}
	if rep, err := r.Check(context.Background()); err != nil || len(rep.Problems) > 0 || rep.Docs != len(acked) {
		t.Errorf("check: %+v, %v; want %d documents and no problem", rep, err, len(acked))
	}
}

// Ensure that a stamp made for another manifest than the index's (its
// original's instance is not the index's: a build before stamp files
// copied a backup's, stamp and all, beside another index's store) is not
// taken: applied, the two indexes had one instance (a read-through,
// RT9-2). A read-only open leaves it, a writable one removes it; the
// instance stays the index's own. The oracle: the instance before the
// file was put there.
func TestBackupStampOfAnotherIndexNotTaken(t *testing.T) {
	root := t.TempDir()
	d := mustOpen(t, filepath.Join(root, "idx"), nil)
	putSome(t, d, "doc", 5)
	bk := filepath.Join(root, "bk")
	if err := d.Backup(context.Background(), bk); err != nil {
		t.Fatal(err)
	}
	stamp, err := os.ReadFile(filepath.Join(bk, codec.BackupStampFile))
	if err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(root, "other")
	o := mustOpen(t, other, nil)
	putSome(t, o, "other", 3)
	own := o.Instance()
	if err := o.Close(); err != nil {
		t.Fatal(err)
	}
	stampPath := filepath.Join(other, codec.BackupStampFile)
	if err := os.WriteFile(stampPath, stamp, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, opts := range []*Options{{ReadOnly: true, MustExist: true}, {MustExist: true}} {
		x, err := Open(other, opts)
		if err != nil {
			t.Fatal(err)
		}
		info, err := x.Info()
		if x.Instance() != own || err != nil || info.Origin != nil {
			t.Errorf("read-only %v: the index with another's stamp: instance %s, origin %+v (%v); want its own %s and none", opts.ReadOnly, x.Instance(), info.Origin, err, own)
		}
		x.Close()
		if _, err := os.Stat(stampPath); errors.Is(err, fs.ErrNotExist) == opts.ReadOnly {
			t.Errorf("read-only %v: the stamp file after the open: %v", opts.ReadOnly, err)
		}
	}
}
