package httpapi

import (
	"errors"
	"testing"
	"time"

	"github.com/lshdb/lshdb/db"
)

// Ensure that ExpiryOut sends a TTL in whole milliseconds rounded up (it
// truncated: 1.9 ms ended after 1 ms, a TTL review's TTL-2), a negative
// one as negative (the server refuses it, as the database does), and
// refuses an ExpireAt past year 9999, which RFC 3339 cannot write and the
// server read as a bad request (TTL-1); and that Expiry reads back what
// ExpiryOut wrote, never shorter than asked.
func TestExpiryOut(t *testing.T) {
	for _, c := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{1900 * time.Microsecond, 2},
		{2 * time.Millisecond, 2},
		{time.Hour + time.Nanosecond, 3_600_001},
		{-time.Nanosecond, -1},
		{-5 * time.Millisecond, -5},
		{-5*time.Millisecond - time.Microsecond, -5},
	} {
		ms, at, err := ExpiryOut(&db.WriteOptions{TTL: c.ttl})
		if err != nil || ms != c.want || at != "" {
			t.Errorf("TTL %v: ttl_ms %d, expire_at %q, %v; want %d", c.ttl, ms, at, err, c.want)
			continue
		}
		if c.ttl > 0 {
			back, _, err := Expiry(ms, "")
			if err != nil || back < c.ttl || back-c.ttl >= time.Millisecond {
				t.Errorf("TTL %v read back as %v, %v: want it, or at most a millisecond more", c.ttl, back, err)
			}
		}
	}
	at := time.Date(9999, 12, 31, 23, 59, 59, 999, time.UTC)
	ms, s, err := ExpiryOut(&db.WriteOptions{ExpireAt: at})
	if err != nil || ms != 0 {
		t.Fatalf("ExpireAt %v: %d, %q, %v", at, ms, s, err)
	}
	if _, back, err := Expiry(0, s); err != nil || !back.Equal(at) {
		t.Errorf("ExpireAt %v read back as %v, %v", at, back, err)
	}
	// A time before year 0, which RFC 3339 cannot write either, is past:
	// the earliest expiry, as the database takes it (RT8-3).
	for _, past := range []time.Time{time.Date(-5, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)} {
		_, s, err := ExpiryOut(&db.WriteOptions{ExpireAt: past})
		if _, back, perr := Expiry(0, s); err != nil || perr != nil || !back.Equal(time.Unix(0, 1)) {
			t.Errorf("ExpireAt %v sent as %q (%v), read back as %v (%v); want the earliest expiry", past, s, err, back, perr)
		}
	}
	for _, at := range []time.Time{time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(99999, 6, 1, 0, 0, 0, 0, time.UTC)} {
		if _, _, err := ExpiryOut(&db.WriteOptions{ExpireAt: at}); !errors.Is(err, db.ErrInvalidOptions) {
			t.Errorf("ExpireAt %v: %v, want ErrInvalidOptions", at, err)
		}
	}
}
