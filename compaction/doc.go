// Package compaction holds the posting-list algebra that Pebble runs inside
// its compactions and reads: the merge operator [Merger], and the rules of
// the maintenance Pebble cannot do by itself: [Purgeable] says which posting
// lists are garbage (db.PurgeEmptyLists deletes them under its writer lock),
// and [Expired], [ExpiresAt], [SweepInterval] and [SweepBatch] are the
// rules of documents written with a TTL: when one is gone, and how their
// removal is paced.
//
// A posting list is appended with Pebble's Merge: an insert writes one
// operand (doc, add) per band, a delete one (doc, remove), with no
// read-modify-write. The merger merges the sorted operands so that the
// newest operation on a doc number wins, and drops removals once the merge
// includes the base value (Finish(includesBase = true)), because nothing
// older remains for them to cancel.
//
// NB: the merger implements Finish only, never DeletableFinish: in Pebble
// v2.1.7 a compaction panics when it returns "delete"
// (cockroachdb/pebble#6168). A list that empties stays as an empty value
// until a purge deletes it.
package compaction
