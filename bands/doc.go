// Package bands chooses and applies the LSH banding of MinHash signatures.
//
// A signature of k values is cut into b bands of r rows (b·r ≤ k; values
// past b·r are unused). Two documents become candidates when all r values of
// at least one band agree, which for Jaccard similarity s happens with
// probability
//
//	P(s) = 1 − (1 − s^r)^b
//
// (the S-curve of Mining of Massive Datasets §3.4). lshdb verifies every
// candidate with exact Jaccard, so a false positive costs only verification
// time while a false negative is lost for good: the default policy,
// [RecallFirst], picks the (b, r) with the least false-positive area
// ∫₀ᵗ P(s) ds among those with P(t) ≥ 0.99 at the threshold t. [Weighted]
// is the classic policy (minimise w_fp·∫₀ᵗ P + w_fn·∫ₜ¹ (1−P)) for users who
// want fewer candidates at some cost in recall.
//
// A band's key is a 64-bit xxhash of the band number and its r values
// ([Key]); keys are a storage format and are the same in every process.
// lshdb's posting lists are keyed by the band and the key's high 32 bits
// (codec.BucketOf): its buckets, as db.DB.Bucket takes them and the
// command prints them, are those 32 bits, not the whole key.
//
// The package is pure computation: no I/O, no state.
package bands
