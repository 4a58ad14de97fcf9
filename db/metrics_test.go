package db

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Ensure that Metrics' health figures follow a model of what happened:
// the expiry sweeps (runs, documents removed, and how long the oldest
// expired document has waited, on a fake clock), the free space against
// the reserve (a filesystem of known capacity), the writes refused for
// want of it, and RoomToWrite, which a server's health check asks.
func TestMetricsHealthFigures(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Unix(1_800_000_000, 0)}
	mem := vfs.NewMem()
	fs := &quotaFS{FS: mem, root: "idx", capacity: 256 << 20}
	const reserve = 64 << 20
	d := mustOpen(t, "idx", &Options{fs: fs, clock: clock.now, ExpirySweep: -1, DiskReserve: reserve})
	defer d.Close()
	metrics := func() Metrics { t.Helper(); return mustMetrics(t, d) }
	for i := range 10 {
		wo := &WriteOptions{TTL: time.Duration(i+1) * time.Minute}
		if i >= 6 {
			wo = nil // no TTL
		}
		if err := d.Put(Doc{ID: fmt.Sprintf("d%d", i), Text: fmt.Sprintf("document number %d of the metrics test", i)}, wo); err != nil {
			t.Fatal(err)
		}
	}
	m := metrics()
	u, _ := fs.GetDiskUsage("idx")
	if m.Damaged || m.DiskReserve != reserve || m.DiskFree != int64(u.AvailBytes) || m.DiskFullRefusals != 0 || m.ExpiryOverdue != 0 || m.ExpirySweeps != 0 {
		t.Fatalf("fresh: %+v (free %d)", m, u.AvailBytes)
	}
	// d0 (1 min) and d1 (2 min) have expired, d0 90 s ago.
	clock.advance(150 * time.Second)
	if m := metrics(); m.ExpiryOverdue != 90*time.Second {
		t.Fatalf("overdue %v, want 90s", m.ExpiryOverdue)
	}
	if n, err := d.SweepExpired(ctx); err != nil || n != 2 {
		t.Fatalf("swept %d, %v; want 2", n, err)
	}
	if m := metrics(); m.ExpiryOverdue != 0 || m.ExpirySweeps != 1 || m.ExpiredSwept != 2 || m.ExpirySweepErrors != 0 || m.Docs != 8 {
		t.Fatalf("after the sweep: %+v", m)
	}
	// The disk fills past the reserve, and past the smaller one of
	// writes that free space: writes are refused and counted, and so is
	// a sweep that has documents to remove.
	u, _ = fs.GetDiskUsage("idx")
	fs.capacity = fs.capacity - int64(u.AvailBytes) + 4<<20
	if err := d.RoomToWrite(); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("RoomToWrite with 4 MiB free: %v", err)
	}
	for i := range 3 {
		if err := d.Put(Doc{ID: fmt.Sprintf("x%d", i), Text: "refused for want of room"}, nil); !errors.Is(err, ErrDiskFull) {
			t.Fatalf("put on a full disk: %v", err)
		}
	}
	clock.advance(time.Hour) // d2 … d5 expire
	if _, err := d.SweepExpired(ctx); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("sweep on a full disk: %v", err)
	}
	m = metrics()
	if m.DiskFullRefusals != 4 || m.ExpirySweeps != 2 || m.ExpirySweepErrors != 1 || m.ExpiredSwept != 2 || m.ExpiryOverdue != time.Hour+150*time.Second-3*time.Minute || m.Docs != 8 {
		t.Fatalf("on a full disk: %+v", m)
	}
	// Room again: the sweep catches up.
	fs.capacity = 256 << 20
	if err := d.RoomToWrite(); err != nil {
		t.Fatal(err)
	}
	if n, err := d.SweepExpired(ctx); err != nil || n != 4 {
		t.Fatalf("swept %d, %v; want 4", n, err)
	}
	if m := metrics(); m.ExpiryOverdue != 0 || m.ExpirySweeps != 3 || m.ExpiredSwept != 6 || m.ExpirySweepErrors != 1 || m.Docs != 4 {
		t.Fatalf("after catching up: %+v", m)
	}
}
