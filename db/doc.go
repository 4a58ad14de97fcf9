// Package db is lshdb's embedded database: near-duplicate search over
// documents, persistent in one Pebble store.
//
// Open a directory, put documents in, and ask which stored documents are
// near-duplicates of a text or of a stored document:
//
//	d, err := db.Open("/var/lib/mydocs", nil) // creates it with the defaults
//	if err != nil { ... }
//	defer d.Close()
//	err = d.Put("doc-1", "The quick brown fox jumps over the lazy dog")
//	res, err := d.Query("The quick brown fox jumped over the lazy dog", nil)
//	for _, m := range res.Matches { fmt.Println(m.ID, m.Jaccard) }
//
// A document becomes a shingle set and a MinHash signature (package
// minhash); the signature is cut into b bands whose keys (package bands)
// name the buckets the document is posted in. A query reads only its own b
// buckets, then verifies each candidate with exact Jaccard against the
// candidate's stored shingle set: every reported score is exact, and a
// pair is found when it shares at least one band, which for a pair at the
// threshold happens with probability Params().Bands.Probability(t) (0.99
// or more with the default, recall-first banding).
//
// # Durability
//
// Every write is one atomic Pebble batch, committed with sync before the
// call returns, unless the caller opted out (Options.NoSync,
// WriteOptions.NoSync). After a crash, every acknowledged synced write is
// there, and no write is half there: a document is never without its
// postings, nor a posting without its document.
//
// # Parameters
//
// Everything that shapes hashes and bands is fixed when the database is
// created and stored in its manifest; reopening with a different value is
// refused (ErrParamsMismatch) rather than silently mixing incompatible
// signatures.
//
// # Concurrency
//
// Every method is safe for concurrent use. Writes are serialized; reads
// run in parallel and each sees one consistent snapshot.
//
// # Bulk loads and all pairs
//
// Load bulk-loads documents for nightly jobs: signatures on every core,
// records sorted within a memory budget (spilling to disk), SSTables
// ingested in one atomic step (no WAL, no memtable). It extends an existing
// index (stored ids are replaced) and gives the index that Put of each
// document would have given. Pairs streams every near-duplicate pair once,
// verifying candidate pairs within a memory budget on every core, and
// reports documents with identical shingle sets as exact duplicates without
// verification; Clusters are its connected components.
//
// # Caveats
//
// Deleting documents leaves their postings as removal operands until
// Pebble compacts them, and emptied posting lists as empty values (Pebble
// v2.1.7 cannot drop a key from inside a merge); Check reports how many.
// A bucket shared by thousands of identical documents (a hot bucket) makes
// every query that reaches it verify them all.
package db
