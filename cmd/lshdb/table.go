package main

import (
	"bufio"
	"io"
	"unicode/utf8"

	"github.com/mattn/go-runewidth"
)

// tableWriter aligns tab-separated cells into columns as text/tabwriter
// does (its rules: a cell is the text before a tab, the text after a
// line's last tab is not aligned, a column's width is its widest cell
// among the lines around it that have one, plus two spaces), but it
// measures cells by the columns a terminal gives them, not by their
// runes: an id or a text in Chinese, Japanese or Korean takes two columns
// a character, and tabwriter's rows with one came out shifted (a review).
//
// Rows are held until Flush, which writes them through a buffer: a
// tabwriter wrote each cell and each run of padding with a write of its
// own, a system call each on a file or a pipe (pairs printing 3.5 million
// rows spent 43% of its CPU time in them).
type tableWriter struct {
	buf  *bufio.Writer
	text []byte // written since the last Flush
	// Flush's, kept for the next: the cells' ends in text (each cell
	// starts after the previous one's end and its tab or newline), their
	// widths, the index of each line's first cell and a last one past
	// the end, and the widths of the columns being written.
	ends, cellWidths, lines, widths []int
}

// tablePadding is the space after a column's widest cell (and the
// narrowest a column can be).
const tablePadding = 2

func newTableWriter(w io.Writer) *tableWriter {
	return &tableWriter{buf: bufio.NewWriterSize(w, 64<<10)}
}

// Write takes rows of cells; nothing is written before Flush.
func (t *tableWriter) Write(p []byte) (int, error) {
	t.text = append(t.text, p...)
	return len(p), nil
}

// Flush aligns and writes the rows given since the last Flush. A last
// line without its newline is written as it is, without one.
func (t *tableWriter) Flush() error {
	if len(t.text) > 0 {
		t.ends, t.cellWidths, t.lines = t.ends[:0], t.cellWidths[:0], append(t.lines[:0], 0)
		start := 0
		for i, c := range t.text {
			if c == '\t' || c == '\n' {
				t.ends = append(t.ends, i)
				t.cellWidths = append(t.cellWidths, cellWidth(t.text[start:i]))
				start = i + 1
				if c == '\n' {
					t.lines = append(t.lines, len(t.ends))
				}
			}
		}
		if start < len(t.text) || t.text[len(t.text)-1] == '\t' {
			t.ends = append(t.ends, len(t.text))
			t.cellWidths = append(t.cellWidths, cellWidth(t.text[start:]))
			t.lines = append(t.lines, len(t.ends))
		}
		t.align(0, len(t.lines)-1, 0)
		t.text = t.text[:0]
	}
	return t.buf.Flush()
}

// cells is the number of cells of line l.
func (t *tableWriter) cells(l int) int { return t.lines[l+1] - t.lines[l] }

// align writes lines [l0, l1), whose columns before col have their widths
// in t.widths: it finds the blocks of consecutive lines that have a cell
// in column col (a cell is followed by a tab, so not a line's last), sets
// each block's width for that column (its widest cell, plus padding) and
// goes on to the next column within the block; a line with no cell there
// is written.
func (t *tableWriter) align(l0, l1, col int) {
	for l := l0; l < l1; {
		if col >= t.cells(l)-1 {
			t.writeLine(l)
			l++
			continue
		}
		end, w := l, tablePadding
		for ; end < l1 && col < t.cells(end)-1; end++ {
			w = max(w, t.cellWidths[t.lines[end]+col]+tablePadding)
		}
		t.widths = append(t.widths[:col], w)
		t.align(l, end, col+1)
		l = end
	}
}

// writeLine writes line l, each cell but the last padded to its column's
// width.
func (t *tableWriter) writeLine(l int) {
	start := 0
	if first := t.lines[l]; first > 0 {
		start = t.ends[first-1] + 1
	}
	last := t.lines[l+1] - 1
	for c := t.lines[l]; c <= last; c++ {
		t.buf.Write(t.text[start:t.ends[c]])
		if c < last {
			for pad := t.widths[c-t.lines[l]] - t.cellWidths[c]; pad > 0; pad-- {
				t.buf.WriteByte(' ')
			}
		}
		start = t.ends[c] + 1
	}
	if end := t.ends[last]; end < len(t.text) {
		t.buf.WriteByte('\n')
	}
}

// cellWidth is the number of terminal columns s takes.
func cellWidth(s []byte) int {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return termWidths.StringWidth(string(s))
		}
	}
	return len(s)
}

// termWidths measures characters as most terminals draw them, whatever the
// locale: East Asian "ambiguous" characters (Greek, Cyrillic, …, °) one
// column. NB: go-runewidth's default takes them as two under a Chinese,
// Japanese or Korean locale, and the same table came out otherwise
// under LANG=ja_JP.UTF-8 (a maintainer's review).
var termWidths = func() *runewidth.Condition {
	c := runewidth.NewCondition()
	c.EastAsianWidth = false
	return c
}()
