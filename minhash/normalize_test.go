package minhash_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/lshdb/lshdb/minhash"
)

// oracleFold is the documented normalization written with the standard
// library: strings.ToLower (which also turns each invalid byte into U+FFFD),
// then strings.Fields (unicode.IsSpace runs) joined by one space.
func oracleFold(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }

// oracleNone replaces each invalid byte by U+FFFD, as a range loop decodes.
func oracleNone(s string) string {
	var b strings.Builder
	for _, r := range s {
		b.WriteRune(r)
	}
	return b.String()
}

// Ensure that normalization matches hand-written answers, including
// multi-byte text, Unicode white space and invalid UTF-8.
func TestNormalizeCases(t *testing.T) {
	for _, c := range []struct{ in, fold string }{
		{"", ""},
		{"   \t\n ", ""},
		{"  Hello,\t\tWORLD!  ", "hello, world!"},
		{"Perché È  COSÌ", "perché è così"},
		{"ÀÉÎÕÜ ÇÑ", "àéîõü çñ"},
		{"東京\u3000都庁", "東京 都庁"},               // ideographic space
		{"a\u00a0b\u0085c\u2028d", "a b c d"}, // NBSP, NEL, line separator
		{"👍🏽 OK", "👍🏽 ok"},
		{"AB\xffC", "ab\uFFFDc"},
		{"\xff\xfe", "\uFFFD\uFFFD"}, // one replacement per invalid byte
		{"\xe2\x82", "\uFFFD\uFFFD"}, // truncated 3-byte sequence
		{"x\x00Y", "x\x00y"},         // NUL is not space
		{"ΣΑΣ", "σασ"},               // per code point: no final-sigma rule
		{"İ", "i"},                   // unicode.ToLower(U+0130)
	} {
		if got := minhash.Normalize(c.in, minhash.NormalizeFold); got != c.fold {
			t.Errorf("Normalize(%q) = %q, want %q", c.in, got, c.fold)
		}
		if o := oracleFold(c.in); o != c.fold {
			t.Errorf("oracle disagrees with the hand answer for %q: %q", c.in, o)
		}
	}
	if got := minhash.Normalize("  A\xffB  ", minhash.NormalizeNone); got != "  A\uFFFDB  " {
		t.Errorf("NormalizeNone = %q", got)
	}
}

// randomText draws text from a mix of ASCII, accented, CJK and emoji code
// points, several kinds of white space and invalid bytes.
func randomText(rng *rand.Rand, n int) string {
	pieces := []string{"a", "B", "c", "Z", "e", "1", ".", " ", " ", "  ", "\t", "\n", "\u00a0", "\u3000",
		"é", "È", "ß", "Ω", "東", "京", "👍", "🏽", "\xff", "\xc3", "\x00", "İ", "ǅ"}
	var b strings.Builder
	for range n {
		b.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return b.String()
}

// Ensure that AppendNormalized equals the standard-library oracle on random
// text, appends after existing bytes, and reports ASCII correctly.
func TestNormalizeMatchesOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 20000 {
		s := randomText(rng, rng.IntN(40))
		for _, n := range []minhash.Normalization{minhash.NormalizeFold, minhash.NormalizeNone} {
			want := oracleNone(s)
			if n == minhash.NormalizeFold {
				want = oracleFold(s)
			}
			got, ascii := minhash.AppendNormalized([]byte("prefix"), s, n)
			if string(got) != "prefix"+want {
				t.Fatalf("case %d (%v): %q normalized to %q, want %q", i, n, s, got[6:], want)
			}
			wantASCII := true
			for j := 0; j < len(want); j++ {
				if want[j] >= utf8.RuneSelf {
					wantASCII = false
				}
			}
			if ascii != wantASCII {
				t.Fatalf("case %d: ascii = %v for %q", i, ascii, want)
			}
		}
	}
}

// FuzzNormalize checks the normalizer against the oracle on any input.
func FuzzNormalize(f *testing.F) {
	f.Add("  Hello,\t\tWORLD!  ")
	f.Add("AB\xffC\u3000東京")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := minhash.Normalize(s, minhash.NormalizeFold), oracleFold(s); got != want {
			t.Fatalf("Normalize(%q) = %q, want %q", s, got, want)
		}
	})
}
