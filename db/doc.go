// Package db is lshdb's embedded database: near-duplicate search over
// documents, persistent in one Pebble store.
//
// Open a directory, put documents in, and ask which stored documents are
// near-duplicates of a text or of a stored document:
//
//	d, err := db.Open("/var/lib/mydocs", nil) // creates it with the defaults
//	if err != nil { ... }
//	defer d.Close()
//	err = d.Put(db.Doc{ID: "doc-1", Text: "The quick brown fox jumps over the lazy dog"}, nil)
//	res, err := d.Query(ctx, "The quick brown fox jumps over the lazy dog!", nil)
//	for _, m := range res.Matches { fmt.Println(m.ID, m.Jaccard) } // doc-1 0.975
//
// (A text must be as close as the index's threshold, 0.8 by default:
// "The quick brown fox jumped over the lazy dog" is at 0.756 and is no
// match.)
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
// # Input other than text
//
// A document may also be the caller's own tokens or token hashes ([Tokens],
// [Hashes]: [DB.PutSet], [DB.QuerySet]) in an index that keeps sets
// (Options.Storage), or a precomputed signature ([DB.PutSignature],
// [DB.QuerySignature]), whose answers are estimates. With
// minhash.SchemeDatasketch the signatures are those of the Python library
// datasketch. [DB.QueryMany] answers many queries of any kind concurrently
// on one snapshot, and every [Match] carries its document's metadata (and
// its text, with QueryOptions.WithText).
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
// # Concurrency and cancellation
//
// Every method is safe for concurrent use. Writes are serialized; reads
// run in parallel and each sees one consistent snapshot. Every method
// that takes a context.Context (the long calls: [DB.Load], [DB.Pairs],
// [DB.Clusters], [DB.Check], [DB.Repair], [DB.Stats], [DB.Buckets],
// [DB.Scan], [DB.Compact], [DB.Backup], [DB.PurgeEmptyLists], the queries,
// and the writers named …Context) stops at its next check when the
// context ends, with ctx's error, and stores nothing half-done. A query
// stops while it hashes a long text too (1 MiB or more: its own, or a
// stored one's for [DB.QueryID]), leaving that hashing to end on a
// goroutine of its own; a shorter one is hashed first, and checked after.
// So does a write whose texts add up to 1 MiB or more, when its context
// ends or Close starts (a write that takes no context too).
//
// [DB.Close] does not hang on lshdb's own work: it cancels the long calls
// in flight (they end with [ErrClosed]), refuses new calls at once (they
// return ErrClosed), waits for the short ones, and releases what open
// iterations hold; it waits for a callback of the caller's that is
// running (a Load's documents iterator blocked on a stream) to return. An
// iteration ([DB.All], [DB.Pairs]) does not hold the database while the
// loop body runs, so the body may call any method, Close included; after
// Close the iteration ends with ErrClosed. A callback that a long call
// runs (Load's documents, a [WithProgress] function, [DB.ClustersFrom]'s
// pairs, [PairsOptions].OnIdentical) may call any method but Close, which would wait for the call
// that runs it; but a write made inside Load's documents or
// LoadOptions.Progress, or inside the progress function of a Repair,
// waits for that call, which holds the writer lock (see below), and so
// until Close: the call and the write then end with ErrClosed. Write
// after it returns.
//
// Only one process (and one DB value in a process) may have a directory
// index open at a time: Open returns [ErrLocked] otherwise (an index on
// Redis may be opened by any number of processes). The lock is Pebble's
// fcntl lock on the LOCK file and, on Linux, a flock(2) on the same file,
// which the holding process's own reads of the index's files (a
// checksum, a copy) do not release (they release the fcntl lock; on NFS
// and SMB, which take no flock beside it, and on other systems, do not
// open LOCK in the process that holds the index). A [DB.Load] holds the
// writer lock for its whole run: writers and purges wait for it.
//
// Every slice and string a method returns is owned by the caller, except
// the id lists of the groups [DB.PairGroups] yields, which later groups of
// the same run share (see [PairGroup]).
//
// # Disk space
//
// Pebble cannot recover from running out of disk space mid-write, so
// writes are refused with [ErrDiskFull] once the filesystem has less than
// Options.DiskReserve free (64 MiB by default, or four memtables if more),
// and a writable Open below 8 MiB plus two memtables (24 MiB by default).
// The refused write stores nothing; reads go on working. The temporary
// files of Pairs (and Clusters) and Load are held to the reserve too, a
// read-only handle's as well: a run whose files would take it ends with
// ErrDiskFull and removes them.
//
// # Bulk loads and all pairs
//
// [DB.Load] bulk-loads documents for nightly jobs: signatures on every
// core, records written straight into SSTables in input order, postings
// and ids sorted within a memory budget (spilling sorted runs to disk),
// everything ingested in one atomic step (no WAL, no memtable). It extends
// an existing index (stored ids are replaced) and gives the index that Put
// of each document would have given. It holds the writer lock while it
// runs; Close cancels it. Pairs streams every near-duplicate pair once,
// verifying candidate pairs within a memory budget on every core, and
// reports documents with identical shingle sets as exact duplicates without
// verification; Clusters groups them: connected components by default, or
// centers (PairsOptions.Mode).
//
// # Caveats
//
// Deleting documents leaves their postings as removal operands until
// Pebble compacts them, and emptied posting lists as empty values (Pebble
// v2.1.7 cannot drop a key from inside a merge); Check reports how many,
// and [DB.PurgeEmptyLists] and [DB.Compact] delete them, as a writable
// handle does in the background every hour ([Options.PurgeEvery]). A bucket shared by thousands of
// identical documents (a hot bucket) makes every query that reaches it
// verify them all, and Pairs report m(m−1)/2 pairs for m copies
// (Clusters reports them as one cluster). Pairs and Load keep temporary
// files inside the database directory (removed when they end, or by the
// next writable Open after a crash). Index files follow the process's umask:
// a text index (the default storage) keeps every text, so restrict the
// directory's permissions if the texts are private.
package db
