// Package codec owns every byte that lshdb writes to disk: the key layout
// of its one Pebble keyspace and the value formats, each versioned.
//
//	key                                   value
//	"m"                                   manifest: format version and every parameter
//	                                      that shapes hashes and bands (msgpack)
//	"n"                                   counters: next doc number, live documents
//	"d" + doc number (uint64 big-endian)  doc record (formats 2 to 5): external id, set size
//	                                      and fingerprint, then by storage mode the text and
//	                                      (format 5) its signature's 64-byte sketch, or the
//	                                      signature and 32-bit set, and metadata
//	"i" + external id                     doc number (uint64 big-endian)
//	"p" + band (uint16 BE) + bucket (uint32 BE: the high half of the band's hash)
//	                                      posting list: sorted (doc number, add|remove)
//	"x" + expiry (int64 BE, Unix ns) + doc number (uint64 BE)
//	                                      empty: the expiry index (documents put with a TTL,
//	                                      whose records hold the expiry too)
//
// Hot data is raw binary: doc records hold their signature as little-endian
// integers and their 32-bit set Golomb-Rice coded, posting lists their doc numbers as
// delta-varints (doc numbers are dense, so gaps are small); metadata (the
// manifest) is msgpack. Every decoder checks
// lengths, order and ranges and returns an error wrapping [ErrCorrupt] on
// bad bytes; none panics, whatever the input (the fuzz tests hold them to
// it).
//
// The package is pure: it knows nothing of Pebble.
package codec
