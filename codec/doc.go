// Package codec owns every byte that lshdb writes to disk: the key layout
// of its one Pebble keyspace and the value formats, each versioned.
//
//	key                                   value
//	"m"                                   manifest: format version and every parameter
//	                                      that shapes hashes and bands (msgpack)
//	"n"                                   counters: next doc number, live documents
//	"d" + doc number (uint64 big-endian)  doc record: external id, signature, shingle set,
//	                                      optional text and metadata (raw binary)
//	"i" + external id                     doc number (uint64 big-endian)
//	"p" + band (uint16 BE) + bucket (uint64 BE)
//	                                      posting list: sorted (doc number, add|remove)
//
// Hot data is raw binary: doc records hold their signature and shingle set
// as little-endian integers, posting lists their doc numbers as
// delta-varints (doc numbers are dense, so gaps are small); metadata (the
// manifest) is msgpack. Every decoder checks
// lengths, order and ranges and returns an error wrapping [ErrCorrupt] on
// bad bytes; none panics, whatever the input (the fuzz tests hold them to
// it).
//
// The package is pure: it knows nothing of Pebble.
package codec
