package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
)

// Ensure that sorted pairs come out in pairCmp's order (best first, then
// ids) when they spill to disk, with ids that hold NUL bytes and ids that
// are prefixes of others: the oracle is an in-memory sort of the same
// pairs.
func TestPairSorterSpills(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	ids := []string{"a", "a\x00", "a\x00b", "ab", "b", "", "\x00", "zz\x00\x00", "ä"}
	var want []db.Pair
	for i := range 20000 {
		p := db.Pair{
			A:       ids[rng.IntN(len(ids))] + fmt.Sprint(rng.IntN(50)),
			B:       fmt.Sprintf("doc-%d-%s", i%997, ids[rng.IntN(len(ids))]),
			Jaccard: float64(rng.IntN(5)) / 4,
		}
		want = append(want, p)
	}
	s, err := newPairSorter(0, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	for _, p := range want {
		if err := s.add(p); err != nil {
			t.Fatal(err)
		}
	}
	if s.ext.Runs() < 2 {
		t.Fatalf("%d runs: the test does not spill", s.ext.Runs())
	}
	slices.SortFunc(want, pairCmp)
	var got []db.Pair
	if err := s.each(func(p db.Pair) error { got = append(got, p); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		for i := range min(len(got), len(want)) {
			if got[i] != want[i] {
				t.Fatalf("pair %d: got %+q, want %+q", i, []string{got[i].A, got[i].B, fmt.Sprint(got[i].Jaccard)}, []string{want[i].A, want[i].B, fmt.Sprint(want[i].Jaccard)})
			}
		}
		t.Fatalf("got %d pairs, want %d", len(got), len(want))
	}
}

// Ensure that pairs --sort=false prints each pair's ids in order (a < b),
// as the sorted output does: the same lines, in another order. A fifth
// of the streamed pairs came as b,a.
func TestStreamedPairsOrdered(t *testing.T) {
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, barDocs(t, dir, 1000)}, ""); code != 0 {
		t.Fatal(errOut)
	}
	streamed, _, c1 := runLine([]string{"pairs", "--db", idx, "--sort=false", "--output", "tsv"}, "")
	sorted, _, c2 := runLine([]string{"pairs", "--db", idx, "--output", "tsv"}, "")
	s1, s2 := strings.Split(strings.TrimSpace(streamed), "\n"), strings.Split(strings.TrimSpace(sorted), "\n")
	slices.Sort(s1)
	slices.Sort(s2)
	if c1 != 0 || c2 != 0 || len(s1) < 100 || !slices.Equal(s1, s2) {
		t.Fatalf("streamed and sorted pairs differ (exit %d, %d; %d and %d lines)", c1, c2, len(s1), len(s2))
	}
	for _, l := range s1[1:] { // NB: after the header
		if f := strings.Split(l, "\t"); f[0] >= f[1] {
			t.Fatalf("a pair out of order: %q", l)
		}
	}
}

// Ensure that a pairs run removes what killed runs left in the temporary
// directory (their spill of every pair for --clusters, a sort's runs):
// named for a process that is gone and untouched for ten minutes; not a
// recent one, nor one of a process alive.
func TestPairsSweepDeadSpills(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	old := time.Now().Add(-time.Hour)
	mk := func(name string, dir bool, mtime time.Time) string {
		p := filepath.Join(tmp, name)
		var err error
		if dir {
			err = os.Mkdir(p, 0o755)
		} else {
			err = os.WriteFile(p, []byte("{}\n"), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead := mk("lshdb-pairs-999999999-1.jsonl", false, old)
	deadSort := mk("lshdb-pairs-sort-999999999-2", true, old)
	recent := mk("lshdb-pairs-999999999-3.jsonl", false, time.Now())
	alive := mk(fmt.Sprintf("lshdb-pairs-%d-4.jsonl", os.Getppid()), false, old)
	dir := t.TempDir()
	idx := filepath.Join(dir, "idx")
	if _, errOut, code := runLine([]string{"insert", "--db", idx, barDocs(t, dir, 300)}, ""); code != 0 {
		t.Fatal(errOut)
	}
	if _, errOut, code := runLine([]string{"pairs", "--db", idx, "--output", "json", "--clusters", filepath.Join(dir, "c.json")}, ""); code != 0 {
		t.Fatal(errOut)
	}
	for p, want := range map[string]bool{dead: false, deadSort: false, recent: true, alive: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: present %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}
