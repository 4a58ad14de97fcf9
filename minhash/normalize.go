package minhash

import (
	"slices"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"
)

// Normalization says how text is normalized before shingling. The zero
// value is [NormalizeFold], the default.
type Normalization uint8

const (
	// NormalizeFold lower-cases every code point with [unicode.ToLower],
	// collapses every run of [unicode.IsSpace] white space to one space and
	// trims the ends. Invalid UTF-8 bytes become U+FFFD. This is the default.
	NormalizeFold Normalization = iota
	// NormalizeNone keeps the text as it is; invalid UTF-8 bytes still
	// become U+FFFD.
	NormalizeNone
	// NormalizeNFKC is NormalizeFold for text whose characters are written
	// in more than one way: before NormalizeFold, the text is case-folded
	// (Unicode full case folding, [cases.Fold]: ΣΑΣ and σας both fold to
	// σασ), put in Unicode normalization form NFKC ([norm.NFKC]: accents
	// written as combining marks, full-width letters, ligatures and
	// superscripts become their composed and plain forms), and rid of its
	// format characters (category Cf: zero-width spaces and joiners, soft
	// hyphens, byte-order and directional marks). Under NormalizeFold
	// such texts share few shingles: a text and its NFD form were at
	// Jaccard 0.15, its full-width form at 0, and one zero-width space in
	// a sentence took it below 0.8 (a quality review). It costs more than
	// NormalizeFold, a pass of each step over the text.
	//
	// The format characters go last: one between a letter and its
	// combining accent ("a\u200b\u0301") blocks their composition, and
	// the text keeps the two code points where its plain form has one
	// ("á"), so it is not at Jaccard 1 with it, and normalizing the result
	// again composes them. Removing them first would mend it, but would
	// change the shingles of such texts in every nfkc index, whose stored
	// set sizes and fingerprints their texts must re-shingle to.
	NormalizeNFKC
)

// String returns "fold", "none" or "nfkc".
func (n Normalization) String() string {
	switch n {
	case NormalizeFold:
		return "fold"
	case NormalizeNone:
		return "none"
	case NormalizeNFKC:
		return "nfkc"
	}
	return "normalization(" + strconv.Itoa(int(n)) + ")"
}

// ParseNormalization parses the names returned by [Normalization.String].
func ParseNormalization(s string) (Normalization, error) {
	switch s {
	case "fold", "":
		return NormalizeFold, nil
	case "none":
		return NormalizeNone, nil
	case "nfkc":
		return NormalizeNFKC, nil
	}
	return 0, optionError("Normalization", "unknown normalization %q (want fold, none or nfkc)", s)
}

// nfkcChains are transformers of NormalizeNFKC's steps before
// NormalizeFold's (a chain holds state: one per goroutine at a time).
//
// NB: folded again after NFKC, as Unicode's NFKC_Casefold does: NFKC
// makes letters that folding changes (the lunate sigma ϲ became ς, where
// σ folds to σ: a read-through's R5).
var nfkcChains = sync.Pool{New: func() any {
	return transform.Chain(cases.Fold(), norm.NFKC, cases.Fold(), runes.Remove(runes.In(unicode.Cf)))
}}

// nfkc returns text case-folded, in NFKC and without format characters
// (see NormalizeNFKC), with each invalid UTF-8 byte as U+FFFD.
func nfkc(text string) string {
	if !utf8.ValidString(text) {
		b, _ := appendValid(nil, text)
		text = string(b)
	}
	t := nfkcChains.Get().(transform.Transformer)
	defer nfkcChains.Put(t)
	t.Reset()
	out, _, err := transform.String(t, text)
	if err != nil {
		// NB: the steps refuse no valid UTF-8; kept as it is, should one.
		return text
	}
	return out
}

// asciiSpace marks the ASCII bytes for which unicode.IsSpace is true.
var asciiSpace = [128]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// asciiFold maps each ASCII byte to its lower case, and white space to ' '.
// asciiIsSpace is 1 for ASCII white space, 0 otherwise.
var asciiFold, asciiIsSpace = func() (fold, isSpace [128]byte) {
	for c := range 128 {
		fold[c] = byte(c)
		switch {
		case asciiSpace[c]:
			fold[c], isSpace[c] = ' ', 1
		case 'A' <= c && c <= 'Z':
			fold[c] = byte(c + 'a' - 'A')
		}
	}
	return fold, isSpace
}()

// replacement is U+FFFD in UTF-8, written for each invalid input byte.
const replacement = "\uFFFD"

// AppendNormalized appends the normalized form of text to dst and returns
// the extended buffer, and whether the appended bytes are all ASCII. See the
// package documentation for the exact rules.
func AppendNormalized(dst []byte, text string, n Normalization) ([]byte, bool) {
	switch n {
	case NormalizeNone:
		return appendValid(dst, text)
	case NormalizeNFKC:
		text = nfkc(text)
	}
	start := len(dst)
	ascii := true
	// NB: the ASCII path is branch-free: every byte is written, folded, and
	// the write position advances unless the byte is a space following a
	// space (or the start). prevSpace starts at 1 so leading space is
	// dropped; a trailing space is cut at the end. Space runs are a fifth of
	// English text, too many for a predicted branch. The folded form of an
	// ASCII byte is one byte, so len(text) bytes of room suffice until the
	// first multi-byte code point.
	prevSpace := 1
	dst = slices.Grow(dst, len(text)+1)
	buf := dst[:cap(dst)]
	w := len(dst)
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			i++
			sp := int(asciiIsSpace[c])
			buf[w] = asciiFold[c]
			w += 1 - sp&prevSpace
			prevSpace = sp
			continue
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		i += size
		if unicode.IsSpace(r) {
			buf[w] = ' '
			w += 1 - prevSpace
			prevSpace = 1
			continue
		}
		prevSpace = 0
		// NB: r is RuneError for an invalid byte (size 1); ToLower keeps it,
		// and AppendRune writes U+FFFD, as strings.ToLower would.
		r = unicode.ToLower(r)
		if r < utf8.RuneSelf {
			buf[w] = byte(r)
			w++
			continue
		}
		ascii = false
		dst = utf8.AppendRune(buf[:w], r)
		// Restore the invariant: room for every remaining input byte.
		dst = slices.Grow(dst, len(text)-i+1)
		buf, w = dst[:cap(dst)], len(dst)
	}
	if prevSpace == 1 && w > start {
		w-- // a trailing space
	}
	return buf[:w], ascii
}

// appendValid appends text with each invalid UTF-8 byte replaced by U+FFFD.
func appendValid(dst []byte, text string) ([]byte, bool) {
	ascii := true
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		ascii = false
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, replacement...)
		} else {
			dst = append(dst, text[i:i+size]...)
		}
		i += size
	}
	return dst, ascii
}

// Normalize returns the normalized form of text (a convenience for callers
// that want to show it; the hot path uses [AppendNormalized]).
func Normalize(text string, n Normalization) string {
	b, _ := AppendNormalized(nil, text, n)
	return string(b)
}
