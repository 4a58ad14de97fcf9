package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// outFlagHelp is the help of pairs' and clusters' --out.
const outFlagHelp = "write the output to this file instead of standard output: into a temporary file beside it, renamed over it once complete, so that an interrupted or failed run leaves no partial file there (a redirect leaves one that reads as complete; a killed run leaves its hidden .NAME.lshdb-PID-….tmp, which the next run writing NAME removes, or one writing another output beside it once 12 hours unwritten); gzip (BGZF) when it ends .gz, zstd when it ends .zst"

// checkOutFile refuses an --out path that names a compression lshdb does
// not write, or is a directory, before any work.
func checkOutFile(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	if err := compressionNameFits("--out", path); err != nil {
		return err
	}
	if fd, ok := streamOf(path); ok {
		if err := givenStream(fd); err != nil {
			return fmt.Errorf("--out %s: %w", path, err)
		}
		return nil
	}
	// NB: before the run, not after it: a path that cannot be written
	// failed once the work was done.
	if err := writable(path); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	return nil
}

// nameFormat returns the format an output's name says by its extension,
// after a compression's (.gz, .gzip, .bgz, .zst, .zstd, as nameWriter
// writes them): one of outputFormats' ("jsonl", "csv", "tsv",
// "parquet"), or "" for a name that says none (.txt among them: TSV or
// JSON Lines in a .txt file is common, a review's M3). filter's and
// export's checks use it, and pairs' and clusters' (outNameFits).
func nameFormat(path string) string {
	n := strings.ToLower(filepath.Base(path))
	suffix, _ := nameCompression(n)
	return outputFormats[filepath.Ext(strings.TrimSuffix(n, suffix))]
}

// outNameFits refuses an output (flag's, such as --out) named path whose
// extension names a format other than the one the command cmd writes
// there (written, an --output value): pairs --out pp.csv wrote the
// aligned table into pp.csv, and --output json --out pp.csv JSON Lines,
// with exit 0, for a CSV reader to fail on the next morning (a nightly
// job's review, B1). formats are the --output values that may be written
// there, for the hint. A name that says no format (nameFormat) is taken.
func outNameFits(flag, cmd, path, written string, formats ...string) error {
	if path == "" || path == "-" {
		return nil
	}
	// NB: --output's names for the formats of files: json for jsonl.
	named := nameFormat(path)
	if named == "jsonl" {
		named = "json"
	}
	if named == "" || named == written {
		return nil
	}
	what := map[string]string{"table": "an aligned text table", "json": "JSON Lines", "csv": "CSV", "tsv": "TSV", "parquet": "Parquet"}
	ext := map[string]string{"table": ".txt", "json": ".jsonl", "csv": ".csv", "tsv": ".tsv"}[written]
	msg := fmt.Sprintf("%s %s names %s, but %s writes %s there", flag, escControls(path), what[named], cmd, what[written])
	switch {
	case len(formats) > 1 && slices.Contains(formats, named):
		return usagef("%s (--output %s): give --output %s, or name it %s", msg, written, named, ext)
	case len(formats) > 1:
		return usagef("%s (--output %s), and never %s: name it %s, or give it no such extension", msg, written, what[named], ext)
	}
	return usagef("%s: name it %s, or give it no such extension", msg, ext)
}

// streamOf returns the descriptor that path names when it names one of
// the process's own open files: /dev/stdout, /dev/stderr, /dev/fd/N,
// /proc/self/fd/N or /proc/PID/fd/N of this process. Such an output is
// written through that open file (openStream), never renamed over:
// /dev/stdout resolves to the file standard output was redirected to,
// and a run with --out /dev/stdout >> night.log renamed its own file
// over the log, losing its lines and everything else written to
// standard output, with exit 0 (a review).
func streamOf(path string) (int, bool) {
	p := filepath.Clean(path)
	switch p {
	case "/dev/stdout":
		return 1, true
	case "/dev/stderr":
		return 2, true
	}
	for _, prefix := range []string{"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/", "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/"} {
		if rest, ok := strings.CutPrefix(p, prefix); ok {
			if n, err := strconv.Atoi(rest); err == nil && n >= 0 && strconv.Itoa(n) == rest {
				return n, true
			}
		}
	}
	return 0, false
}

// isStdout reports whether an output path is standard output: none, "-",
// a name of descriptor 1, or the file standard output is.
func isStdout(path string) bool {
	if path == "" || path == "-" {
		return true
	}
	if fd, ok := streamOf(path); ok {
		return fd == 1
	}
	so, err := os.Stdout.Stat()
	if err != nil || !so.Mode().IsRegular() {
		return false
	}
	fi, err := os.Stat(path)
	return err == nil && os.SameFile(so, fi)
}

// sameFile reports whether two output paths name one file: the same
// file where both exist (a hard or symbolic link to it too), else the
// same absolute path once the symbolic links of their directories are
// resolved.
//
// NB: compared as cleaned strings, "$PWD/x.jsonl" and "x.jsonl" passed:
// the clusters were renamed into place, then the pairs over them, and
// the run exited 0.
func sameFile(a, b string) bool {
	if a == "" || b == "" || a == "-" || b == "-" {
		return false
	}
	if fa, err := os.Stat(a); err == nil {
		fb, err := os.Stat(b)
		return err == nil && os.SameFile(fa, fb)
	}
	return resolved(a) == resolved(b)
}

// resolved is path made absolute, its directory's symbolic links
// resolved where it exists.
func resolved(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return filepath.Clean(path)
	}
	if dir, err := filepath.EvalSymlinks(filepath.Dir(abs)); err == nil {
		return filepath.Join(dir, filepath.Base(abs))
	}
	return abs
}

// toFile runs fn with the command's standard output going to path
// instead (none when path is "" or "-"): a temporary file beside it,
// compressed by its name (nameWriter: .gz BGZF gzip, .zst zstd), synced and renamed
// over path when fn succeeds, removed when it fails (createTempFor,
// commitTemp). A kill -9 leaves only the hidden temporary file, which the
// next output to path removes.
//
// NB: pairs and clusters wrote to standard output only, and the nightly
// "lshdb pairs … > pairs.csv" of a run that was interrupted, or met a
// full disk, left a file of whole rows that read as complete (CSV, TSV
// and JSON without --header have no end line to check).
//
// A file another output of fn commits (pairs' --clusters) waits for this
// one (deferOutCommit): committed after it, or removed when it fails, so
// that the two are of one run (unless that second commit fails: the run
// then exits 1 saying so).
func (a *app) toFile(path string, fn func() error) error {
	if path == "" || path == "-" {
		return fn()
	}
	f, err := createTempFor(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	zw, err := nameWriter(bw, path) // NB: as --clusters and gen --out compress
	if err != nil {
		return commitTemp(f, path, false, err)
	}
	out := &outWriter{w: zw}
	savedOut, savedStdout := a.out, a.stdout
	a.out, a.stdout, a.outCommits = out, out, &[]deferredCommit{}
	err = fn()
	pending := *a.outCommits
	a.out, a.stdout, a.outCommits = savedOut, savedStdout, nil
	if out.err != nil {
		// NB: the write's failure (a full disk) is the cause, whatever
		// fn made of it.
		err = fmt.Errorf("writing %s: %w", escControls(path), out.err)
	}
	// NB: closed on a failure too: it ends the compressor's goroutines.
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = bw.Flush()
	}
	for _, p := range pending {
		// NB: two renames are not one step: the waiting file's old
		// version goes first (removeReplaced).
		if err == nil {
			err = removeReplaced(p.tmp, p.path)
		}
	}
	if err = commitTemp(f, path, err == nil, err); err != nil {
		err = fmt.Errorf("%w (%s was not written)", err, escControls(path))
	}
	ok := err == nil
	if ok && len(pending) > 0 && sinksRenaming != nil {
		sinksRenaming()
	}
	for _, p := range pending {
		// NB: one line ("; "): errors.Join's line break was printed
		// escaped, as \n.
		if cerr := p.commit(ok); cerr != nil && err == nil {
			err = cerr
		} else if cerr != nil {
			err = fmt.Errorf("%w; %w", err, cerr)
		}
	}
	return err
}

// deferOutCommit runs commit once the file of --out is committed (ok) or
// failed (!ok), where one is being written (toFile), and reports whether
// it will; else it does nothing and reports false.
func (a *app) deferOutCommit(tmp *os.File, path string, commit func(ok bool) error) bool {
	if a.outCommits == nil {
		return false
	}
	*a.outCommits = append(*a.outCommits, deferredCommit{tmp: tmp, path: path, commit: commit})
	return true
}

// deferredCommit is an output file waiting for toFile's: written to tmp,
// which commit renames over path (or removes, when not ok).
type deferredCommit struct {
	tmp    *os.File
	path   string
	commit func(ok bool) error
}

// pictureFormats are formats an output's name may say, by extension, that
// lshdb's pictures and pages are not.
var pictureFormats = map[string]string{".png": "PNG", ".jpg": "JPEG", ".jpeg": "JPEG", ".gif": "GIF", ".webp": "WebP", ".pdf": "PDF",
	".svg": "SVG", ".html": "HTML", ".htm": "HTML", ".json": "JSON", ".jsonl": "JSON Lines", ".csv": "CSV", ".txt": "text"}

// nameSaysFormat refuses an output named path (flag's) whose extension
// names a format other than the one written (what, whose extensions are
// exts): tune --plot curve.png wrote an SVG picture into curve.png, and
// report --out r.pdf an HTML page into r.pdf, silently (a newcomer's
// review), where filter and export refuse such names. A name without
// an extension, or with one of no format above, is taken.
func nameSaysFormat(flag, path, what string, exts ...string) error {
	ext := strings.ToLower(filepath.Ext(path))
	if named, ok := pictureFormats[ext]; ok && !slices.Contains(exts, ext) {
		return usagef("%s %s names %s, but %s (name it %s)", flag, escControls(path), named, what, exts[0])
	}
	return nil
}

// intoIndex refuses an output file whose directory holds an index (a
// Pebble store: an lshdb index, a backup of one, or another program's),
// whatever the command, before anything is written there: the output
// would replace one of its files or sit among them. NB: export --out
// idx/000006.sst, pairs --out idx/MANIFEST-000001, insert --rejects and
// --cpuprofile into the index each replaced a file of the store, exited
// 0, and left an index that no longer opened (a bad-input review, B1);
// backup --to refused such a path, and no other output did. A path
// through a symbolic link is judged where it leads.
func intoIndex(path string) error {
	target := path
	if t, err := filepath.EvalSymlinks(path); err == nil {
		target = t
	} else if l, lerr := os.Readlink(path); lerr == nil {
		// NB: a link to a file not yet made: the output makes it where
		// the link leads (a read-through's R4).
		if !filepath.IsAbs(l) {
			l = filepath.Join(filepath.Dir(path), l)
		}
		target = l
	}
	dir := filepath.Dir(target)
	if d, err := filepath.EvalSymlinks(dir); err == nil {
		dir = d
	}
	if !holdsStore(dir) {
		return nil
	}
	return usagef("cannot write %s: its directory %s holds an index, whose files an output would replace or sit among: write it elsewhere", escControls(path), escControls(dir))
}

// holdsStore reports whether dir holds a Pebble store: the marker that
// names its current manifest, or a MANIFEST file beside an OPTIONS file
// or a CURRENT one (older stores, and LevelDB's and RocksDB's). NB: a
// MANIFEST-… file alone (MANIFEST-2026-12.txt) does not make one (a
// read-through's R5).
func holdsStore(dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	manifest, beside := false, false
	for _, e := range entries {
		name := e.Name()
		switch {
		case strings.HasPrefix(name, "marker.manifest."):
			return true
		case strings.HasPrefix(name, "MANIFEST-"):
			manifest = true
		case strings.HasPrefix(name, "OPTIONS-") || name == "CURRENT":
			beside = true
		}
	}
	return manifest && beside
}
