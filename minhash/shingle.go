package minhash

import (
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ShingleKind says what a shingle is made of. The zero value is
// [ShingleChar], the default.
type ShingleKind uint8

const (
	// ShingleChar shingles are runs of K code points.
	ShingleChar ShingleKind = iota
	// ShingleWord shingles are runs of K words.
	ShingleWord
)

// String returns "char" or "word".
func (k ShingleKind) String() string {
	switch k {
	case ShingleChar:
		return "char"
	case ShingleWord:
		return "word"
	}
	return "shinglekind(" + strconv.Itoa(int(k)) + ")"
}

// ParseShingleKind parses the names returned by [ShingleKind.String].
func ParseShingleKind(s string) (ShingleKind, error) {
	switch s {
	case "char", "":
		return ShingleChar, nil
	case "word":
		return ShingleWord, nil
	}
	return 0, optionError("Kind", "unknown shingle kind %q (want char or word)", s)
}

const (
	// DefaultCharK is the default size of character shingles.
	DefaultCharK = 5
	// DefaultWordK is the default size of word shingles.
	DefaultWordK = 3
	// MaxK is the largest shingle size accepted.
	MaxK = 256
)

// Options says how text becomes a shingle set. The zero value gives the
// defaults: folded text, character 5-shingles, set mode, no stop words.
type Options struct {
	// Kind is ShingleChar or ShingleWord. Default: ShingleChar.
	Kind ShingleKind
	// K is the shingle size in code points (char) or words (word), 1 to
	// MaxK. Default (0): DefaultCharK for char, DefaultWordK for word.
	K int
	// Bag makes the i-th occurrence of a shingle a distinct element, so
	// that Jaccard over the sets is the weighted Jaccard of the shingle
	// multisets. Default: false (set mode: repeats count once).
	Bag bool
	// Normalization applied before shingling. Default: NormalizeFold.
	Normalization Normalization
	// StopWords are removed before word shingling; each is normalized like
	// the text before comparison. Only valid with ShingleWord. Default: none.
	StopWords []string
}

// EnsureDefaults fills in the fields left at zero and returns o.
func (o *Options) EnsureDefaults() *Options {
	if o.K == 0 {
		if o.Kind == ShingleWord {
			o.K = DefaultWordK
		} else {
			o.K = DefaultCharK
		}
	}
	return o
}

// Validate reports the first option that is out of range, as an error
// wrapping [ErrInvalidOptions]. Call it after EnsureDefaults.
func (o *Options) Validate() error {
	if o.Kind > ShingleWord {
		return optionError("Kind", "unknown shingle kind %d", o.Kind)
	}
	if o.K < 1 || o.K > MaxK {
		return optionError("K", "shingle size %d is outside 1..%d", o.K, MaxK)
	}
	if o.Normalization > NormalizeNFKC {
		return optionError("Normalization", "unknown normalization %d", o.Normalization)
	}
	if len(o.StopWords) > 0 && o.Kind != ShingleWord {
		return optionError("StopWords", "stop words need word shingles")
	}
	for _, w := range o.StopWords {
		if err := CheckStopWord(w, o.Normalization); err != nil {
			return err
		}
	}
	return nil
}

// CheckStopWord reports, as an error wrapping [ErrInvalidOptions], a stop
// word that could never match: one that is empty once normalized with n,
// or that holds white space. Words are the maximal runs of non-space of
// the normalized text, so such a stop word would be accepted and then
// drop nothing.
func CheckStopWord(w string, n Normalization) error {
	norm := Normalize(w, n)
	switch {
	case norm == "":
		return optionError("StopWords", "%q is empty once normalized (%s): a stop word is one word", w, n)
	case strings.IndexFunc(norm, isSpace) >= 0:
		return optionError("StopWords", "%q holds white space once normalized (%s): a stop word is one word, as the text is split into words at white space", w, n)
	}
	return nil
}

// MatchingStopWords returns the stop words of words that can match a word
// (those CheckStopWord takes), in their order: a Shingler with them drops
// the same words as one with all of them. An index made before stop words
// were checked opens with them.
func MatchingStopWords(words []string, n Normalization) []string {
	var out []string
	for _, w := range words {
		if CheckStopWord(w, n) == nil {
			out = append(out, w)
		}
	}
	return out
}

// HashShingle is the hash of one shingle: xxhash64 (seed 0) of its UTF-8
// bytes. It is a storage format: never change it.
func HashShingle(b []byte) uint64 { return sum64(b) }

// BagElement is the element that stands for the i-th occurrence (counting
// from 0) of the shingle with hash h in bag mode: h itself for the first,
// a bijective mix of h and i for the others. It is a storage format.
func BagElement(h uint64, i int) uint64 {
	if i == 0 {
		return h
	}
	return fmix64(h + uint64(i)*0x9e3779b97f4a7c15)
}

// A Shingler turns text into shingle hashes. It keeps its buffers between
// calls: reuse one per goroutine. It is not safe for concurrent use.
type Shingler struct {
	opts   Options
	stop   map[string]struct{}
	norm   []byte  // normalized text
	words  []byte  // word mode: kept words joined by single spaces
	starts []int32 // unit start offsets in the shingled buffer, plus an end sentinel
	sorter hashSorter
	table  distinctTable
}

// NewShingler returns a Shingler for opts (defaults filled in).
func NewShingler(opts Options) (*Shingler, error) {
	opts.EnsureDefaults()
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	s := &Shingler{opts: opts}
	s.opts.StopWords = slices.Clone(opts.StopWords)
	if len(opts.StopWords) > 0 {
		s.stop = make(map[string]struct{}, len(opts.StopWords))
		for _, w := range opts.StopWords {
			s.stop[Normalize(w, opts.Normalization)] = struct{}{}
		}
	}
	return s, nil
}

// Options returns the options in effect, defaults filled in.
func (s *Shingler) Options() Options { return s.opts }

// prepare normalizes text and finds its units (code points or words). It
// returns the buffer to shingle, the number of units n, and sep: shingle j
// is buf[starts[j] : starts[j+K]-sep], and the whole text (fewer than K
// units) is buf[:starts[n]-sep]. When ascii is true (char mode, all ASCII)
// starts is not filled: unit j starts at byte j.
func (s *Shingler) prepare(text string) (buf []byte, n, sep int, ascii bool) {
	s.norm, ascii = AppendNormalized(s.norm[:0], text, s.opts.Normalization)
	if s.opts.Kind == ShingleChar {
		if ascii {
			return s.norm, len(s.norm), 0, true
		}
		// NB: room for every start at once: appended one by one, the
		// starts of a 30 MB text grew by a quarter at a time, and the
		// copies took 1.2 s, three times its hashing.
		s.starts = room(s.starts, runeCount(s.norm)+1)
		for i := 0; i < len(s.norm); {
			s.starts = append(s.starts, int32(i))
			_, size := utf8.DecodeRune(s.norm[i:])
			i += size
		}
		n = len(s.starts)
		s.starts = append(s.starts, int32(len(s.norm)))
		return s.norm, n, 0, false
	}
	// Words: maximal runs of non-space. Rebuild them joined by one space so
	// that unnormalized text and stop-word removal shingle the same way.
	b := s.norm
	s.words, s.starts = room(s.words, len(b)+1), s.starts[:0]
	for i := 0; i < len(b); {
		r, size := rune(b[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRune(b[i:])
		}
		if isSpace(r) {
			i += size
			continue
		}
		j := i + size
		for j < len(b) {
			r, size := rune(b[j]), 1
			if r >= utf8.RuneSelf {
				r, size = utf8.DecodeRune(b[j:])
			}
			if isSpace(r) {
				break
			}
			j += size
		}
		w := b[i:j]
		i = j
		if s.stop != nil {
			if _, ok := s.stop[string(w)]; ok {
				continue
			}
		}
		s.starts = append(s.starts, int32(len(s.words)))
		s.words = append(s.words, w...)
		s.words = append(s.words, ' ')
	}
	n = len(s.starts)
	s.starts = append(s.starts, int32(len(s.words)))
	return s.words, n, 1, false
}

// room returns buf emptied, with room for n elements. NB: not
// slices.Grow, which clears the room it makes (a third of a second for the
// starts of a 30 MB text) and copies what buf holds.
func room[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, 0, n)
	}
	return buf[:0]
}

// zeroed returns buf as n zero values, reusing its memory when it can (a
// hash table's slots).
func zeroed[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	buf = buf[:n]
	clear(buf)
	return buf
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return asciiSpace[r]
	}
	return unicode.IsSpace(r)
}

// AppendHashes appends the hash of every shingle occurrence of text, in text
// order and with repeats, and returns the extended slice. This is the
// hashing floor of the pipeline; bag mode does not change it.
func (s *Shingler) AppendHashes(dst []uint64, text string) []uint64 {
	buf, n, sep, ascii := s.prepare(text)
	k := s.opts.K
	if n < k {
		return s.appendShort(dst, buf, n, sep, ascii)
	}
	return s.appendRange(slices.Grow(dst, n-k+1), buf, sep, ascii, 0, n-k+1)
}

// appendRange appends the hashes of shingles i to j-1 of buf (see prepare
// for buf, sep and ascii).
func (s *Shingler) appendRange(dst []uint64, buf []byte, sep int, ascii bool, i, j int) []uint64 {
	k := s.opts.K
	if ascii {
		for ; i < j; i++ {
			dst = append(dst, sum64(buf[i:i+k]))
		}
		return dst
	}
	st := s.starts
	for ; i < j; i++ {
		dst = append(dst, sum64(buf[st[i]:int(st[i+k])-sep]))
	}
	return dst
}

// AppendElements appends the elements of text's shingle set, the values a
// signature is computed over: in set mode the shingle hashes in text order
// with repeats (a minimum does not care), in bag mode the expanded bag
// elements, sorted and de-duplicated.
func (s *Shingler) AppendElements(dst []uint64, text string) []uint64 {
	start := len(dst)
	dst = s.AppendHashes(dst, text)
	if s.opts.Bag {
		dst = append(dst[:start], expandBag(dst[start:])...)
	}
	return dst
}

// AppendSet appends text's shingle set, sorted and de-duplicated (in bag
// mode: the expanded bag elements), and returns the extended slice.
func (s *Shingler) AppendSet(dst []uint64, text string) []uint64 {
	start := len(dst)
	dst = s.AppendHashes(dst, text)
	set := dst[start:]
	if s.opts.Bag {
		return append(dst[:start], expandBag(set)...)
	}
	s.sorter.sort(set)
	return append(dst[:start], slices.Compact(set)...)
}

// AppendDistinct appends text's shingle set like AppendSet, de-duplicated
// but in no particular order, and returns the extended slice. It costs
// less than AppendSet (a hash table instead of a sort: 0.6x AppendSet's
// time on the generated corpus in BenchmarkSetOf, shingling included, the
// set step alone a third of the sort's), for callers that only count,
// fingerprint or sketch the set. In bag mode it is AppendSet.
func (s *Shingler) AppendDistinct(dst []uint64, text string) []uint64 {
	if s.opts.Bag {
		return s.AppendSet(dst, text)
	}
	buf, n, sep, ascii := s.prepare(text)
	k := s.opts.K
	if n < k {
		return s.appendShort(dst, buf, n, sep, ascii)
	}
	m := n - k + 1
	if uint64(m) >= 1<<32-1 {
		// NB: the table's positions are 32-bit. No document the
		// database takes has this many shingles.
		return s.AppendSet(dst, text)
	}
	s.table.begin(m, maxStartSlots)
	defer s.table.end()
	start := len(dst)
	if m <= maxStartSlots/4 {
		// The text's hashes fit the table it begins with: all of them
		// into dst, de-duplicated there in place, in one pass with no
		// growth (a tenth faster than the batches below on the
		// benchmarks' texts).
		dst = s.appendRange(slices.Grow(dst, m), buf, sep, ascii, 0, m)
		return s.table.add(dst[:start], start, dst[start:])
	}
	// NB: a long text's hashes go through a small buffer into the table,
	// rather than all of them into dst first: a text that repeats itself
	// needs no room for its occurrences (30 MB of text: 240 MiB).
	var chunk [256]uint64
	for i := 0; i < m; i += len(chunk) {
		dst = s.table.add(dst, start, s.appendRange(chunk[:0], buf, sep, ascii, i, min(i+len(chunk), m)))
	}
	return dst
}

// appendShort appends the hash of a text of n < K units, none if it has
// none (see prepare for buf, sep and ascii).
func (s *Shingler) appendShort(dst []uint64, buf []byte, n, sep int, ascii bool) []uint64 {
	if n == 0 {
		return dst
	}
	end := len(buf)
	if !ascii {
		end = int(s.starts[n]) - sep
	}
	return append(dst, sum64(buf[:end]))
}

// expandBag sorts hashes in place, replaces the i-th repeat of each hash by
// BagElement(h, i), and returns the sorted, de-duplicated result (a prefix
// of hashes).
func expandBag(hashes []uint64) []uint64 {
	slices.Sort(hashes)
	for i := 0; i < len(hashes); {
		j := i + 1
		for j < len(hashes) && hashes[j] == hashes[i] {
			j++
		}
		for o := 1; o < j-i; o++ {
			hashes[i+o] = BagElement(hashes[i], o)
		}
		i = j
	}
	slices.Sort(hashes)
	return slices.Compact(hashes)
}

// AppendShingles appends the shingles of text as strings, in text order
// with repeats. It allocates a string per shingle: use it to show shingles
// to people (explain output, debugging), not on the hot path.
func (s *Shingler) AppendShingles(dst []string, text string) []string {
	buf, n, sep, ascii := s.prepare(text)
	k := s.opts.K
	at := func(j int) int {
		if ascii {
			return j
		}
		return int(s.starts[j])
	}
	switch {
	case n == 0:
	case n < k:
		dst = append(dst, string(buf[:at(n)-sep]))
	default:
		for j := 0; j+k <= n; j++ {
			dst = append(dst, string(buf[at(j):at(j+k)-sep]))
		}
	}
	return dst
}

// runeCount is utf8.RuneCount without its copy: from the first non-ASCII
// byte on, RuneCount counts a string conversion of the rest, which
// allocated the normalized text's size for every non-ASCII document (Go
// 1.26).
func runeCount(b []byte) int {
	n := 0
	for i := 0; i < len(b); n++ {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, size := utf8.DecodeRune(b[i:])
		i += size
	}
	return n
}
