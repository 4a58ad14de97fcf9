// Package extsort sorts more data than a memory budget holds: each sorter
// accumulates values in memory, sorts them and writes a sorted run file
// whenever its budget fills, and merges the runs (with what is left in
// memory) when it is read. It is the machinery of lshdb's bulk load and
// all-pairs extraction; it knows nothing of documents or Pebble's keys.
//
//   - [KeySorter] sorts variable-length byte keys, each with a uint64 tag
//     (a load's ids with their input positions); [KeyLog] writes such
//     records in the order given and replays them.
//   - [Fixed] sorts fixed-size values ([NewUint64]: Pairs' candidate pairs).
//   - [BandSorter] sorts (bucket, value) entries band by band with a radix
//     sort on the buckets' top bits (a load's postings).
//   - [Merge] is the k-way merge KeySorter and Fixed read their runs
//     through; BandSorter's merge is its own, for speed (see MergeBand).
//
// Run files live in a directory the caller owns, as long as one load or
// one Pairs call: they are not synced, and Close removes them. A sorter is
// used by one goroutine at a time, except where its methods say otherwise.
package extsort
