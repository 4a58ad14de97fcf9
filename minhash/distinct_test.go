package minhash

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// Ensure that the table keeps exactly the distinct values, each once, against
// sort + compact, on uniform hashes, small integers (not uniform), zeros
// and heavy repeats, with tables that start small enough to grow.
func TestDistinctTable(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var dt distinctTable
	maxStarts := []int{maxStartSlots, 4, 64}
	gens := map[string]func(n int) []uint64{
		"uniform": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = rng.Uint64()
			}
			return a
		},
		"small": func(n int) []uint64 {
			a := make([]uint64, n)
			for i := range a {
				a[i] = uint64(rng.IntN(n/2 + 1))
			}
			return a
		},
		"repeats": func(n int) []uint64 {
			vals := []uint64{0, 7, 1 << 63, rng.Uint64()}
			a := make([]uint64, n)
			for i := range a {
				a[i] = vals[rng.IntN(len(vals))]
			}
			return a
		},
	}
	for name, gen := range gens {
		for _, n := range []int{0, 1, 2, 3, 17, 100, 1000, 5000} {
			for range 5 {
				a := gen(n)
				want := slices.Compact(slices.Sorted(slices.Values(a)))
				var got []uint64
				switch maxStart := maxStarts[rng.IntN(len(maxStarts))]; {
				case maxStart == maxStartSlots:
					// In place, as one batch.
					dt.begin(len(a), maxStart)
					got = slices.Clone(dt.add(a[:0], 0, a))
				default:
					// A table that starts small and grows, batch
					// by batch, into a slice with values before
					// the set's.
					dt.begin(len(a), maxStart)
					got = []uint64{1, 2, 3}
					for i := 0; i < len(a); i += 7 {
						got = dt.add(got, 3, a[i:min(i+7, len(a))])
					}
					got = got[3:]
				}
				dt.end()
				// First occurrences keep their order.
				seen := map[uint64]bool{}
				for i, x := range got {
					if seen[x] {
						t.Fatalf("%s n=%d: %d repeated at %d", name, n, x, i)
					}
					seen[x] = true
				}
				slices.Sort(got)
				if !slices.Equal(got, want) {
					t.Fatalf("%s n=%d: %d distinct, want %d", name, n, len(got), len(want))
				}
			}
		}
	}
}

// Ensure that DocumentUnsorted gives Document's set (as a set) and the same
// signature, in every scheme, in bag and word mode and with K = 1.
func TestDocumentUnsorted(t *testing.T) {
	texts := []string{"", "a", "the quick brown fox jumps over the lazy dog", "abab abab abab abab abab abab", "Ünïcödé text, with repeats: la la la la la la la la"}
	// Texts of more shingles than AppendDistinct hashes at a time (256),
	// ASCII and not, repeating themselves and not.
	rng := rand.New(rand.NewPCG(3, 4))
	for _, alphabet := range []string{"ab ", "abcdefghijklmnopqrstuvwxyz ", "äöü ßé€ "} {
		letters := []rune(alphabet)
		for _, n := range []int{255, 256, 257, 260, 1000, 5000} {
			var b strings.Builder
			for range n {
				b.WriteRune(letters[rng.IntN(len(letters))])
			}
			texts = append(texts, b.String())
		}
	}
	for _, opts := range []Options{{}, {Bag: true}, {Kind: ShingleWord, K: 2}, {K: 1}} {
		for _, scheme := range []Scheme{SchemeFSS, SchemeOPH, SchemeClassic} {
			h, err := NewHasher(opts, SketchOptions{Scheme: scheme})
			if err != nil {
				t.Fatal(err)
			}
			for _, text := range texts {
				set, sig := h.Document(nil, nil, text)
				uset, usig := h.DocumentUnsorted(nil, nil, text)
				if !slices.Equal(set, slices.Sorted(slices.Values(uset))) || !slices.Equal(sig, usig) {
					t.Fatalf("scheme %v options %+v %q: sets %d/%d, signatures equal %v", scheme, opts, text, len(set), len(uset), slices.Equal(sig, usig))
				}
			}
		}
	}
}

// Ensure that runeCount counts as utf8.RuneCount does (ASCII, multi-byte,
// invalid and cut UTF-8) and allocates nothing.
func TestRuneCount(t *testing.T) {
	for _, s := range []string{"", "abc", "héllo wörld", "日本語のテキスト", "a\xffb\xc3", "\xe6\x97", strings.Repeat("ü", 1000)} {
		if got, want := runeCount([]byte(s)), utf8.RuneCount([]byte(s)); got != want {
			t.Errorf("runeCount(%q) = %d, utf8.RuneCount %d", s, got, want)
		}
	}
	b := []byte(strings.Repeat("héllo wörld ", 1000))
	if n := testing.AllocsPerRun(100, func() { runeCount(b) }); n != 0 {
		t.Errorf("runeCount allocated %v times a call", n)
	}
}
