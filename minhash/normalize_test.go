package minhash_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode"
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

// Ensure that NormalizeNFKC gives one form to the ways of writing a text
// that a quality review found far apart under NormalizeFold, and that the
// forms are those worked out by hand from Unicode's tables: NFD accents,
// full-width letters, ligatures, a superscript, Greek capitals and final
// sigma, zero-width and soft-hyphen format characters, invalid bytes.
func TestNormalizeNFKC(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Cafe\u0301 de\u0301ja\u0300 vu", "café déjà vu"},                         // combining marks composed
		{"Café déjà vu", "café déjà vu"},                                           // precomposed as it is
		{"ＡＢＣ ｄｅｆ １２３", "abc def 123"},                                             // full-width
		{"\ufb01ne o\ufb03ce", "fine office"},                                      // ligatures ﬁ, ﬃ
		{"x\u00b2 + H\u2082O", "x2 + h2o"},                                         // superscript, subscript
		{"ΣΑΣ σας", "σασ σασ"},                                                     // full case folding: final sigma
		{"ϲοφια Ϲ", "σοφια σ"},                                                     // lunate sigma, folded after NFKC
		{"Straße STRASSE", "strasse strasse"},                                      // ß folds to ss
		{"zero\u200bwidth soft\u00adhyphen \ufeffbom", "zerowidth softhyphen bom"}, // format characters
		{"  many \u3000 spaces\t\n", "many spaces"},                                // white space as fold
		{"bad\xffbyte", "bad\ufffdbyte"},                                           // invalid UTF-8
	} {
		if got := minhash.Normalize(c.in, minhash.NormalizeNFKC); got != c.want {
			t.Errorf("Normalize(%q, nfkc) = %q, want %q", c.in, got, c.want)
		}
	}
	// The forms of one text shingle alike: Jaccard 1 under nfkc, and far
	// apart under fold (so the test tells the modes apart).
	base := "Le café du coin sert un déjà-vu fini, ΣΟΦΙΑ"
	for _, other := range []string{
		"Le cafe\u0301 du coin sert un de\u0301ja\u0300-vu \ufb01ni, σοφια",
		"Ｌｅ ｃａｆé ｄｕ ｃｏｉｎ ｓｅｒｔ ｕｎ ｄéｊà-ｖｕ ｆｉｎｉ， ΣΟΦΙΑ",
	} {
		for _, n := range []minhash.Normalization{minhash.NormalizeNFKC, minhash.NormalizeFold} {
			h, err := minhash.NewHasher(minhash.Options{Normalization: n}, minhash.SketchOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a, _ := h.Document(nil, nil, base)
			b, _ := h.Document(nil, nil, other)
			j := minhash.Jaccard(a, b)
			if n == minhash.NormalizeNFKC && j != 1 || n == minhash.NormalizeFold && j > 0.5 {
				t.Errorf("%s: Jaccard %.3f of %q and %q", n, j, base, other)
			}
		}
	}
	// A normalized text normalizes to itself, for every code point (as
	// NFKC_Casefold is closed: folding before NFKC alone was not, for
	// eight of them).
	var bad []string
	for r := rune(0); r <= unicode.MaxRune; r++ {
		if !utf8.ValidRune(r) {
			continue
		}
		once := minhash.Normalize("a"+string(r)+"b", minhash.NormalizeNFKC)
		if twice := minhash.Normalize(once, minhash.NormalizeNFKC); twice != once && len(bad) < 10 {
			bad = append(bad, fmt.Sprintf("U+%04X: %q, then %q", r, once, twice))
		}
	}
	if len(bad) > 0 {
		t.Errorf("nfkc is not idempotent: %s", strings.Join(bad, "; "))
	}
	if n, err := minhash.ParseNormalization("nfkc"); err != nil || n != minhash.NormalizeNFKC || n.String() != "nfkc" {
		t.Errorf("ParseNormalization(nfkc) = %v, %v", n, err)
	}
}
