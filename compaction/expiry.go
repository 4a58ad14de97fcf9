package compaction

import "time"

// Expiry: the rule that decides when a document put with a TTL is gone,
// and how its removal is paced. Readers apply Expired to every record
// they read, so that an expired document is never returned; the sweep
// (db's, under its writer lock; on Redis, beside the servers' own key
// expiry) removes what expired in batches of SweepBatch, every
// SweepInterval, so that a document's postings are removed at most
// SweepInterval (plus the time to sweep what is due before it) after
// it expires.

// Expired reports whether a record that expires at expires (Unix
// nanoseconds; 0: never) has expired at now (Unix nanoseconds): from
// its expiry time on, inclusive.
func Expired(expires, now int64) bool { return expires != 0 && expires <= now }

// SweepInterval is how often a sweep looks for expired documents, unless
// the database's options say otherwise.
const SweepInterval = time.Second

// SweepBatch is how many expired documents one sweep batch removes (one
// write batch, one writer-lock hold).
const SweepBatch = 1024

// ExpiresAt returns the expiry time (Unix nanoseconds) of a write at now
// with ttl (> 0) or at (non-zero), and 0 when neither is given.
func ExpiresAt(now time.Time, ttl time.Duration, at time.Time) int64 {
	switch {
	case !at.IsZero():
		return at.UnixNano()
	case ttl > 0:
		return now.Add(ttl).UnixNano()
	}
	return 0
}
