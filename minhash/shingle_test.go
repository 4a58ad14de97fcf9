package minhash_test

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cespare/xxhash/v2"
	"github.com/lshdb/lshdb/minhash"
)

// oracleShingles computes the documented shingles the slow, obvious way:
// normalize with the standard library, then cut []rune or strings.Fields.
func oracleShingles(text string, o minhash.Options) []string {
	o.EnsureDefaults()
	norm := oracleFold(text)
	if o.Normalization == minhash.NormalizeNone {
		norm = oracleNone(text)
	}
	var units []string
	sep := ""
	if o.Kind == minhash.ShingleChar {
		for _, r := range norm {
			units = append(units, string(r))
		}
	} else {
		sep = " "
		stop := map[string]bool{}
		for _, w := range o.StopWords {
			stop[oracleFold(w)] = true
		}
		for _, w := range strings.Fields(norm) {
			if !stop[w] {
				units = append(units, w)
			}
		}
	}
	switch {
	case len(units) == 0:
		return nil
	case len(units) < o.K:
		return []string{strings.Join(units, sep)}
	}
	var out []string
	for i := 0; i+o.K <= len(units); i++ {
		out = append(out, strings.Join(units[i:i+o.K], sep))
	}
	return out
}

// oracleSet hashes shingles with xxhash and de-duplicates through a map.
func oracleSet(shingles []string) []uint64 {
	m := map[uint64]bool{}
	for _, s := range shingles {
		m[xxhash.Sum64String(s)] = true
	}
	out := make([]uint64, 0, len(m))
	for h := range m {
		out = append(out, h)
	}
	slices.Sort(out)
	return out
}

func mustShingler(t testing.TB, o minhash.Options) *minhash.Shingler {
	t.Helper()
	s, err := minhash.NewShingler(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// Ensure that shingles match hand-computed answers: Mining of Massive
// Datasets' examples, short and empty texts, multi-byte and invalid text.
func TestShinglesHandComputed(t *testing.T) {
	char := func(k int) minhash.Options { return minhash.Options{K: k} }
	word := func(k int, stop ...string) minhash.Options {
		return minhash.Options{Kind: minhash.ShingleWord, K: k, StopWords: stop}
	}
	for _, c := range []struct {
		text string
		opts minhash.Options
		want []string // distinct shingles, sorted
	}{
		{"abcab", char(2), []string{"ab", "bc", "ca"}},               // MMDS §3.2.1
		{"abcdabd", char(2), []string{"ab", "bc", "bd", "cd", "da"}}, // MMDS Example 3.3
		{"abc", char(5), []string{"abc"}},                            // shorter than k: one shingle
		{"  ", char(5), nil},                                         // empty after normalization
		{"", char(1), nil},                                           //
		{"Perché", char(5), []string{"erché", "perch"}},              // accents are one code point
		{"東京都庁舎", char(2), []string{"京都", "庁舎", "東京", "都庁"}},         // CJK
		{"👍🏽👍", char(2), []string{"🏽👍", "👍🏽"}},                       // emoji and modifier: code points
		{"A\xffB", char(2), []string{"a\uFFFD", "\uFFFDb"}},          // invalid byte = U+FFFD
		{"A  B\tc", char(3), []string{" b ", "a b", "b c"}},          // white space collapsed
		{"The cat sat on the mat", word(2), []string{"cat sat", "on the", "sat on", "the cat", "the mat"}},
		{"The cat sat on the mat", word(2, "THE", "on"), []string{"cat sat", "sat mat"}},
		{"one two", word(3), []string{"one two"}}, // fewer words than k
		{"the the", word(1, "the"), nil},          // every word a stop word
	} {
		s := mustShingler(t, c.opts)
		got := s.AppendShingles(nil, c.text)
		slices.Sort(got)
		got = slices.Compact(got)
		if !slices.Equal(got, c.want) {
			t.Errorf("shingles(%q, %+v) = %q, want %q", c.text, c.opts, got, c.want)
		}
		if set, want := s.AppendSet(nil, c.text), oracleSet(c.want); !slices.Equal(set, want) {
			t.Errorf("set(%q) = %x, want %x", c.text, set, want)
		}
	}
}

// Ensure that shingles, hashes and sets equal the oracle's on random text
// for every kind, size and normalization.
func TestShinglesMatchOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	var configs []minhash.Options
	for _, k := range []int{1, 2, 3, 5, 9} {
		configs = append(configs,
			minhash.Options{K: k},
			minhash.Options{K: k, Normalization: minhash.NormalizeNone},
			minhash.Options{Kind: minhash.ShingleWord, K: k},
			minhash.Options{Kind: minhash.ShingleWord, K: k, StopWords: []string{"a", "É", "東"}},
			minhash.Options{Kind: minhash.ShingleWord, K: k, Normalization: minhash.NormalizeNone})
	}
	for _, o := range configs {
		s := mustShingler(t, o)
		for range 400 {
			text := randomText(rng, rng.IntN(30))
			want := oracleShingles(text, o)
			if got := s.AppendShingles(nil, text); !slices.Equal(got, want) {
				t.Fatalf("%+v: shingles(%q) = %q, want %q", o, text, got, want)
			}
			hashes := s.AppendHashes([]uint64{42}, text)
			if len(hashes) != len(want)+1 || hashes[0] != 42 {
				t.Fatalf("%+v: AppendHashes(%q) returned %d values after the prefix, want %d", o, text, len(hashes)-1, len(want))
			}
			for i, sh := range want {
				if hashes[i+1] != xxhash.Sum64String(sh) {
					t.Fatalf("%+v: hash of %q is %#x, want xxhash64 %#x", o, sh, hashes[i+1], xxhash.Sum64String(sh))
				}
			}
			if got := s.AppendSet(nil, text); !slices.Equal(got, oracleSet(want)) {
				t.Fatalf("%+v: set(%q) differs from the oracle", o, text)
			}
		}
	}
}

// Ensure that in bag mode the i-th occurrence is a distinct element, so the
// Jaccard of bag-mode sets is the weighted Jaccard of the multisets.
func TestBagMode(t *testing.T) {
	o := minhash.Options{Kind: minhash.ShingleWord, K: 1, Bag: true}
	s := mustShingler(t, o)
	a := s.AppendSet(nil, "a a a b")
	b := s.AppendSet(nil, "a a b b c")
	if len(a) != 4 || len(b) != 5 {
		t.Fatalf("bag sets have %d and %d elements, want 4 and 5", len(a), len(b))
	}
	// Hand answer: counts a:3/2, b:1/2, c:0/1 → Σmin = 3, Σmax = 6.
	if got := minhash.Jaccard(a, b); got != 0.5 {
		t.Errorf("Jaccard of bag sets = %v, want 3/6", got)
	}
	// The elements are the shingle hash for the first occurrence and
	// BagElement for the repeats.
	ha := xxhash.Sum64String("a")
	want := []uint64{ha, minhash.BagElement(ha, 1), minhash.BagElement(ha, 2), xxhash.Sum64String("b")}
	slices.Sort(want)
	if !slices.Equal(a, want) {
		t.Errorf("bag set of %q = %x, want %x", "a a a b", a, want)
	}
	// Random check against the multiset oracle.
	rng := rand.New(rand.NewPCG(7, 8))
	plain := mustShingler(t, minhash.Options{Kind: minhash.ShingleWord, K: 1})
	for range 500 {
		x := randomWords(rng, rng.IntN(30))
		y := randomWords(rng, rng.IntN(30))
		mx := plain.AppendHashes(nil, x)
		my := plain.AppendHashes(nil, y)
		slices.Sort(mx)
		slices.Sort(my)
		want := minhash.WeightedJaccard(mx, my)
		if got := minhash.Jaccard(s.AppendSet(nil, x), s.AppendSet(nil, y)); got != want {
			t.Fatalf("bag Jaccard(%q, %q) = %v, weighted Jaccard = %v", x, y, got, want)
		}
	}
}

func randomWords(rng *rand.Rand, n int) string {
	words := []string{"a", "b", "c", "d", "e"}
	var w []string
	for range n {
		w = append(w, words[rng.IntN(len(words))])
	}
	return strings.Join(w, " ")
}

// Ensure that options out of range are refused with ErrInvalidOptions and
// that zero values take the documented defaults.
func TestOptionsValidate(t *testing.T) {
	for _, o := range []minhash.Options{
		{K: -1}, {K: minhash.MaxK + 1}, {Kind: 7}, {Normalization: 9},
		{StopWords: []string{"the"}}, // stop words need word shingles
	} {
		if _, err := minhash.NewShingler(o); !errors.Is(err, minhash.ErrInvalidOptions) {
			t.Errorf("NewShingler(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	if k := mustShingler(t, minhash.Options{}).Options().K; k != minhash.DefaultCharK {
		t.Errorf("default char K = %d", k)
	}
	if k := mustShingler(t, minhash.Options{Kind: minhash.ShingleWord}).Options().K; k != minhash.DefaultWordK {
		t.Errorf("default word K = %d", k)
	}
	for _, c := range []struct {
		s    string
		err  error
		name string
	}{{"fss", nil, "fss"}, {"oph", nil, "oph"}, {"", nil, "oph"}, {"classic", nil, "classic"}, {"bogus", minhash.ErrInvalidOptions, ""}} {
		sc, err := minhash.ParseScheme(c.s)
		if !errors.Is(err, c.err) || (err == nil && sc.String() != c.name) {
			t.Errorf("ParseScheme(%q) = %v, %v", c.s, sc, err)
		}
	}
}

// Ensure that a stop word that could never match a word (empty once
// normalized, or holding white space) is refused naming it, and that
// MatchingStopWords keeps exactly the others: a Shingler with them shingles
// as the oracle does with the whole list, where the refused words match no
// word of strings.Fields.
func TestStopWordsThatCannotMatch(t *testing.T) {
	for _, c := range []struct {
		word string
		norm minhash.Normalization
	}{
		{"", minhash.NormalizeFold},
		{" \t", minhash.NormalizeFold},
		{"the cat", minhash.NormalizeFold},
		{"of\tthe", minhash.NormalizeFold},
		{"the\u00a0cat", minhash.NormalizeFold}, // a no-break space is white space
		{" the", minhash.NormalizeNone},         // not trimmed without folding
		{"", minhash.NormalizeNone},
	} {
		o := minhash.Options{Kind: minhash.ShingleWord, Normalization: c.norm, StopWords: []string{"a", c.word}}
		_, err := minhash.NewShingler(o)
		if !errors.Is(err, minhash.ErrInvalidOptions) || !strings.Contains(err.Error(), strconv.Quote(c.word)) {
			t.Errorf("stop word %q (%s): %v, want ErrInvalidOptions naming it", c.word, c.norm, err)
		}
		if got := minhash.MatchingStopWords(o.StopWords, c.norm); !slices.Equal(got, []string{"a"}) {
			t.Errorf("MatchingStopWords(%q, %s) = %q, want [a]", o.StopWords, c.norm, got)
		}
	}
	// Taken: one word once normalized, the ends trimmed by folding.
	for _, w := range []string{"The", " the ", "don't", "東"} {
		if err := minhash.CheckStopWord(w, minhash.NormalizeFold); err != nil {
			t.Errorf("CheckStopWord(%q): %v", w, err)
		}
	}
	rng := rand.New(rand.NewPCG(7, 8))
	all := []string{"a", "the cat", "", "É"}
	for _, k := range []int{1, 2, 3} {
		o := minhash.Options{Kind: minhash.ShingleWord, K: k, StopWords: minhash.MatchingStopWords(all, minhash.NormalizeFold)}
		s := mustShingler(t, o)
		for range 300 {
			text := randomText(rng, rng.IntN(30))
			want := oracleShingles(text, minhash.Options{Kind: minhash.ShingleWord, K: k, StopWords: all})
			if got := s.AppendShingles(nil, text); !slices.Equal(got, want) {
				t.Fatalf("k=%d: shingles(%q) = %q, want %q", k, text, got, want)
			}
		}
	}
}

// FuzzShingles checks the shingling of arbitrary text against the oracle:
// the shingles themselves, the sorted set (AppendSet), the unsorted one
// (AppendDistinct, behind a prefix it must keep), and the signature of the
// elements in text order (Signature) against the one of the set.
func FuzzShingles(f *testing.F) {
	f.Add("The quick brown fox jumps over the lazy dog", uint8(4), false, false)
	f.Add("東京都庁舎 👍🏽👍 A\xffB\u00a0x\u3000İǅ", uint8(1), false, true)
	f.Add("the the the cat sat on the mat the", uint8(0), true, false)
	f.Add(strings.Repeat("abab ", 300)+"ÄÖÜ", uint8(2), false, false)
	f.Fuzz(func(t *testing.T, text string, k uint8, word, none bool) {
		o := minhash.Options{K: int(k%9) + 1}
		if word {
			o.Kind = minhash.ShingleWord
		}
		if none {
			o.Normalization = minhash.NormalizeNone
		}
		h, err := minhash.NewHasher(o, minhash.SketchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s := h.Shingler()
		want := oracleShingles(text, o)
		if got := s.AppendShingles(nil, text); !slices.Equal(got, want) {
			t.Fatalf("%+v: shingles(%q) = %q, want %q", o, text, got, want)
		}
		set := s.AppendSet(nil, text)
		if !slices.Equal(set, oracleSet(want)) {
			t.Fatalf("%+v: set(%q) = %x, want %x", o, text, set, oracleSet(want))
		}
		distinct := s.AppendDistinct([]uint64{7}, text)
		if distinct[0] != 7 || !slices.Equal(slices.Sorted(slices.Values(distinct[1:])), set) {
			t.Fatalf("%+v: AppendDistinct(%q) = %x, want a prefix 7 and %x in any order", o, text, distinct, set)
		}
		if sig, want := h.Signature(nil, text), h.Sketcher().Sketch(nil, set); !slices.Equal(sig, want) {
			t.Fatalf("%+v: Signature(%q) differs from the sketch of its set", o, text)
		}
	})
}
