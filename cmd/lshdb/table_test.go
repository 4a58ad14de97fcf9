package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"text/tabwriter"
)

// TestTableMatchesTabwriter: on ASCII cells the aligner writes what
// text/tabwriter (as the command set it up: min width 2, padding 2,
// spaces) writes, byte for byte, over random tables with ragged rows,
// empty cells, lines of one cell, trailing tabs, several Flushes (each at
// the end of a line, as the commands flush) and a last line without its
// newline.
func TestTableMatchesTabwriter(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "id", "jaccard", "0.8125", "doc-000123", "x y", "ESTIMATE"}
	for c := 0; c < 3000; c++ {
		var want, got bytes.Buffer
		tw := tabwriter.NewWriter(&want, 2, 8, 2, ' ', 0)
		ow := newTableWriter(&got)
		var all strings.Builder
		for f := r.IntN(3); f >= 0; f-- {
			var chunk strings.Builder
			for l := r.IntN(8); l > 0; l-- {
				for cell := r.IntN(5); cell > 0; cell-- {
					chunk.WriteString(words[r.IntN(len(words))] + "\t")
				}
				chunk.WriteString(words[r.IntN(len(words))])
				if l > 1 || f > 0 || r.IntN(4) > 0 {
					chunk.WriteByte('\n')
				} else {
					chunk.WriteString("end") // NB: tabwriter drops a partial line's last tab
				}
			}
			fmt.Fprint(tw, chunk.String())
			fmt.Fprint(ow, chunk.String())
			all.WriteString(chunk.String())
			if err := tw.Flush(); err != nil {
				t.Fatal(err)
			}
			if err := ow.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		if got.String() != want.String() {
			t.Fatalf("case %d, input %q:\ngot\n%q\ntabwriter\n%q", c, all.String(), got.String(), want.String())
		}
	}
}

// TestTableAlignsWideCharacters: a Chinese or Japanese character takes
// two columns of a terminal, and the next column starts after them (the
// layouts below were counted by hand; tabwriter put "0.9" two columns
// right of the others).
func TestTableAlignsWideCharacters(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"ID\tJACCARD\n文書一\t0.9\nabc\t0.8\n", "" +
			"ID      JACCARD\n" +
			"文書一  0.9\n" +
			"abc     0.8\n"},
		{"A\tB\tC\nテスト\tx\t1\nzz\tデータベース\t2\n", "" +
			"A       B             C\n" +
			"テスト  x             1\n" +
			"zz      データベース  2\n"},
		// Greek and … are one column each, in every locale (East Asian
		// "ambiguous"; TestTableWidthsWhateverTheLocale).
		{"Ωμέγα…\t1\nab\t2\n", "" +
			"Ωμέγα…  1\n" +
			"ab      2\n"},
		// é is one column, as in tabwriter; a combining accent none.
		{"é\t1\ne\u0301e\u0301\t2\n", "" +
			"é   1\n" +
			"e\u0301e\u0301  2\n"},
	} {
		var got bytes.Buffer
		w := newTableWriter(&got)
		fmt.Fprint(w, tc.in)
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if got.String() != tc.want {
			t.Errorf("%q:\ngot\n%s\nwant\n%s", tc.in, got.String(), tc.want)
		}
	}
}

// threeDocIndex makes an index of three documents, one and two copies of
// a text and "ab" a near copy of it, and returns its directory.
func threeDocIndex(t *testing.T, one, two string) string {
	t.Helper()
	idx := filepath.Join(t.TempDir(), "idx")
	text := "the quick brown fox jumps over the lazy dog and keeps running far away"
	docs := fmt.Sprintf(`{"id":%q,"text":%q}
{"id":"ab","text":%q}
{"id":%q,"text":%q}
`, one, text, text+" ok", two, text)
	if _, errOut, code := runLine([]string{"insert", "--db", idx, "-"}, docs); code != 0 {
		t.Fatalf("insert: %d %s", code, errOut)
	}
	return idx
}

// TestTablesWideIDs: lshdb pairs and query line up ids in Chinese with
// the ASCII ones, column for column on a terminal.
func TestTablesWideIDs(t *testing.T) {
	idx := threeDocIndex(t, "文書", "c")
	// starts are the terminal columns where the line's fields start,
	// counted by hand: 文 and 書 take two columns each, every other
	// character here one.
	starts := func(line string) []int {
		var cols []int
		col, prev := 0, ' '
		for _, c := range line {
			if c != ' ' && prev == ' ' {
				cols = append(cols, col)
			}
			col++
			if c == '文' || c == '書' {
				col++
			}
			prev = c
		}
		return cols
	}
	for _, args := range [][]string{
		{"pairs", "--db", idx, "--threshold", "0.5"},
		{"query", "--db", idx, "--id", "ab"},
	} {
		out, errOut, code := runLine(args, "")
		if code != 0 {
			t.Fatalf("%s: %d %s", args[0], code, errOut)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) < 3 || !strings.Contains(out, "文書") {
			t.Fatalf("%s: want a header and rows, one with 文書:\n%s", args[0], out)
		}
		head := fmt.Sprint(starts(lines[0]))
		for _, l := range lines[1:] {
			if l == "" || !strings.HasPrefix(l, "c ") && !strings.HasPrefix(l, "ab ") && !strings.HasPrefix(l, "文書 ") {
				break // the summary under the table
			}
			if got := fmt.Sprint(starts(l)); got != head {
				t.Errorf("%s: the fields of %q start at columns %s, the header's at %s:\n%s", args[0], l, got, head, out)
			}
		}
	}
}

// BenchmarkTable writes pairs rows 1,000 at a time (as pairs --sort=false
// flushes) through the aligner and, as the baseline, text/tabwriter.
func BenchmarkTable(b *testing.B) {
	rows := make([]string, 1000)
	for i := range rows {
		rows[i] = fmt.Sprintf("doc-%06d\tdoc-%06d\t0.%04d\n", i*7919%1000000, i*104729%1000000, i%10000)
	}
	for _, bc := range []struct {
		name string
		w    func() (io.Writer, func() error)
	}{
		{"aligner", func() (io.Writer, func() error) { w := newTableWriter(io.Discard); return w, w.Flush }},
		{"tabwriter", func() (io.Writer, func() error) {
			buf := bufio.NewWriterSize(io.Discard, 64<<10)
			w := tabwriter.NewWriter(buf, 2, 8, 2, ' ', 0)
			return w, func() error { w.Flush(); return buf.Flush() }
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, flush := bc.w()
			for b.Loop() {
				for _, r := range rows {
					io.WriteString(w, r)
				}
				flush()
			}
		})
	}
}

// TestTableWidthsWhateverTheLocale: a table is the same under a
// Japanese locale: go-runewidth's default counts East Asian "ambiguous"
// characters (Greek, …) as two columns there, and most terminals draw
// them as one (a maintainer's review). Each run is a process of its own,
// the locale read as it starts.
func TestTableWidthsWhateverTheLocale(t *testing.T) {
	idx := threeDocIndex(t, "Ωμέγα…", "データ")
	var outs []string
	for _, lang := range []string{"C.UTF-8", "ja_JP.UTF-8"} {
		c := lshdbProcess("query", "--db", idx, "--id", "ab")
		c.Env = append(c.Env, "LANG="+lang, "LC_ALL="+lang)
		out, err := c.Output()
		if err != nil {
			t.Fatalf("LANG=%s: %v", lang, err)
		}
		outs = append(outs, string(out))
	}
	want := "ID      JACCARD  ESTIMATE  BANDS\n"
	if outs[0] != outs[1] || !strings.HasPrefix(outs[0], want) {
		t.Errorf("C.UTF-8:\n%s\nja_JP.UTF-8:\n%s\nwant both to begin %q", outs[0], outs[1], want)
	}
}
