// Package minhash turns text into shingle sets and MinHash signatures.
//
// It is the pure-computation front of lshdb's pipeline:
//
//	text ─ normalize ─ shingle ─ xxhash64 ─┬─ shingle set (sorted, de-duplicated []uint64)
//	                                       └─ signature (k uint32 values, scheme fss, oph, classic or datasketch)
//
// Nothing here does I/O, and nothing depends on per-process state: the same
// text, [Options], [SketchOptions] and seed give the same hashes and
// signatures in every process and on every machine. The hashes are a storage
// format (lshdb persists shingle sets and signatures), so any change to the
// functions below that changes a value is a format change; the golden values
// in testdata/golden catch one.
//
// # Normalization
//
// With the default [NormalizeFold], text is normalized exactly as follows,
// one code point at a time:
//
//   - the text is decoded as UTF-8; each byte that is not part of a valid
//     UTF-8 encoding counts as one U+FFFD (the replacement character), as in
//     a Go range loop;
//   - every code point is lower-cased with [unicode.ToLower], which is what
//     [strings.ToLower] does (no language-specific special casing);
//   - every run of white space ([unicode.IsSpace]) becomes one U+0020 space,
//     and leading and trailing white space is removed.
//
// [NormalizeNone] keeps the text as it is, except that invalid bytes still
// become U+FFFD so that every shingle is valid UTF-8.
//
// [NormalizeNFKC] applies, before the rules of NormalizeFold, Unicode full
// case folding, normalization form NFKC, and the removal of format
// characters (category Cf), so that a text written with combining
// accents, full-width letters, ligatures or zero-width characters shingles
// as its plain form does; but a format character between a letter and its
// combining accent is removed after the composition it blocked, so that
// pair stays two code points (see [NormalizeNFKC]).
//
// # Shingles
//
// Character k-shingles ([ShingleChar], default k = 5) are the runs of k
// consecutive code points of the normalized text; a non-empty text shorter
// than k code points is one shingle, the whole text; an empty text has none.
// Word k-shingles ([ShingleWord], default k = 3) are runs of k consecutive
// words, words being the maximal runs of non-space code points of the
// normalized text, with the words of an optional stop-word list removed
// first; a shingle is its words joined by single spaces, and a non-empty
// text of fewer than k words is one shingle.
//
// Each shingle is hashed with xxhash64 (seed 0) over its UTF-8 bytes. A
// shingle set is the sorted, de-duplicated []uint64 of those hashes. In bag
// mode ([Options.Bag]) the i-th occurrence (i ≥ 1, counting from 0) of a
// shingle is a distinct element with its own hash ([BagElement]), so the
// exact Jaccard of two bag-mode sets is the weighted Jaccard Σmin/Σmax of
// the shingle multisets.
//
// # Signatures
//
// A [Sketcher] computes a signature of k values (default 128) from the
// element hashes of a set. Four schemes:
//
//   - [SchemeFSS] (the default): fast similarity sketching (Dahlgaard,
//     Knudsen and Thorup, FOCS 2017). Round 0 is one-permutation hashing:
//     one 64-bit mix per element picks a bin and a position in it. While
//     bins are empty, further rounds throw every element again with fresh
//     hashes, and a bin keeps the least (round, position) it receives.
//     Each value is a MinHash of the set under an order of its own, so a
//     pair agrees at a position with probability J, and positions agree
//     nearly independently (slightly negatively correlated), at every set
//     size: near the banding's threshold a pair's chance of sharing a band
//     meets or beats the S-curve for short documents too (far below it,
//     where that chance is small, slightly under). Sets of several k·ln k elements need round 0 only, so
//     long documents cost what OPH costs.
//   - [SchemeOPH]: one-permutation hashing with optimal densification
//     (Shrivastava, ICML 2017), the default of indexes made before fss.
//     Empty bins borrow the value of the first non-empty bin along a probe
//     sequence that depends only on the seed and the bin. Unbiased at
//     every set size, but for sets of fewer elements than about k the
//     borrowed values are copies, so bands agree together or not at all
//     and short documents miss 1.2 to 1.6 times as many pairs at the
//     threshold as the S-curve says.
//   - [SchemeClassic]: k multiply-shift hash functions h_i(x) = a_i·x
//     (mod 2^64, a_i odd, drawn from the seed) of the 64-bit element hash,
//     the minimum of each; the value is the high 32 bits of the minimum.
//     k multiplications per element, independent values at every set size.
//     Element 0, a fixed point of every a_i·x, is hashed as a fixed odd
//     constant.
//   - [SchemeDatasketch]: the MinHash of the Python library datasketch, k
//     permutations ((a_i·h + b_i) mod (2⁶¹−1)) & (2³²−1) of each element's
//     32-bit hash drawn as numpy draws them: with the same seed and k, a
//     signature equals datasketch's bit for bit (for indexes shared with a
//     Python pipeline). k evaluations per element, as classic.
//
// [Estimate] gives the fraction of equal values, an unbiased estimate of the
// Jaccard similarity of the two sets.
//
// # Reuse
//
// [Shingler], [Sketcher] and [Hasher] keep their buffers between calls and
// allocate nothing per shingle. They are not safe for concurrent use: keep
// one per goroutine.
package minhash
