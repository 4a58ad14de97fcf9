package db

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	iofs "io/fs"
	"slices"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/wal"

	"github.com/lshdb/lshdb/codec"
)

// A LogDamageError is Open's error when the index's newest write-ahead
// log is damaged before its end: whole records of the log follow the
// damage, and Pebble's recovery, which reads damage in its newest log as
// the torn end a crash leaves, would drop the damaged record and every
// later one, though they were written and, unless they were written with
// NoSync, synced and acknowledged. It matches ErrCorrupt (errors.Is); find
// it with errors.As.
//
// Options.AcceptLogDamage opens the index anyway, accepting the loss: a
// writable open keeps a copy of the log beside it (Kept) for whoever wants
// to look at what was lost, then cuts the log at the damage; a read-only
// one changes nothing, and Pebble's recovery drops the records from the
// damage on in memory (unless its own read-ahead confirms the damage,
// when it fails the open: repair a copy).
//
// NB: why lshdb looks for itself: Pebble 2.1.7's logs carry "synced up
// to" offsets meant to tell damage from a torn tail, but its writer counts
// only the bytes of partly filled 32 KiB blocks, so for batches larger than
// a block (every PutBatch of more than a few documents) the offset stays
// far behind, and damage mid-log mostly reads as a torn tail (when a later
// offset does pass the damage, Pebble fails the open with a corruption
// error that names no way on): 4 bytes overwritten
// in the second of three batches lost 2,000 acknowledged documents, and
// Open and Check said ok. Writes to a log are sequential and a crash only
// cuts them short, so whole records after the damage mean the bytes were
// changed after they were written (by the disk, or by hand), with one
// exception: after a power failure a disk may have kept a later block of
// writes that were never synced (so never acknowledged) and lost an
// earlier one, which reads the same.
type LogDamageError struct {
	// Log is the path of the damaged log file.
	Log string
	// Offset is where the damage is: the first byte of the log that does
	// not read as a record of it.
	Offset int64
	// Records is how many records (write batches) begin after the
	// damage, their first chunk whole (the rest of one may be damaged
	// too): with the damaged one, what an open drops. In the newest log
	// at least 1 (damage to its last record alone reads as a torn tail);
	// in an older one (Older) it may be 0.
	Records int
	// End is where the last whole chunk of the log after the damage ends.
	End int64
	// Kept is the copy of the log a writable open with
	// Options.AcceptLogDamage made before it opened the index ("" if none).
	Kept string
	// Older is set when the damaged log is a write-ahead log older than
	// the newest, which Pebble replays only whole: the index does not
	// open at all without Options.AcceptLogDamage (every command is
	// refused, check --repair's and a salvage's too). Cut is where an open
	// accepting the loss cuts it, the start of the damaged record: that
	// record and the Records whole ones after it in this log are
	// dropped; the later logs are replayed whole.
	Older bool
	Cut   int64
	// CutBefore lists the older logs that this open had cut already,
	// accepting their damage, before it found this one (a writable
	// open with Options.AcceptLogDamage): their copies are kept.
	CutBefore []*LogDamageError
	// Puts and Deletes are what the dropped records that still read
	// held, in log order: the ids of the documents they put (PutBatch,
	// PutIfNew, …: put them again) and of those they deleted (a delete,
	// or the expiry sweep's removal of an expired one). Unread counts the
	// dropped records that did not read, whose ids are not known: the
	// damaged one, and any after it missing a chunk or damaged too. Of a
	// write-ahead log only (not the Manifest's).
	Puts, Deletes []string
	Unread        int
	// Manifest is set when the damaged log is not a write-ahead log but
	// the store's MANIFEST, Pebble's log of its table files: each record
	// adds the tables a flush, compaction or load wrote and removes those
	// it replaced. Pebble reads damage there as the torn end of a crash
	// too, and opens the store as of the records before it: the tables
	// added since were deleted, with the documents written to them, and
	// Open and Check said ok. Where
	// a later record removed a table the earlier ones list, the open
	// fails anyway: that table is gone.
	Manifest bool
}

func (e *LogDamageError) Error() string {
	after := fmt.Sprintf("%d records written after it begin", e.Records)
	if e.Records == 1 {
		after = "1 record written after it begins"
	}
	if e.Older {
		changed := "No file was changed"
		if len(e.CutBefore) > 0 {
			changed = "This open cut already " + cutLogs(e.CutBefore)
		}
		return fmt.Sprintf("lshdb: database is corrupt: the write-ahead log %s, older than the newest, is damaged or cut short at byte %d: "+
			"an open replays such a log only whole, so the index does not open as it is. "+changed+". Restore a backup; or keep a copy of the index (cp -a), "+
			"then lshdb check --repair opens it accepting the loss (Options.AcceptLogDamage): it cuts this log at the start of the damaged record "+
			"(byte %d), keeping a copy of the log beside it, which drops that record and the %d whole ones after it in this log (acknowledged writes, "+
			"unless the machine lost power before they were synced); the later logs are replayed whole",
			e.Log, e.Offset, e.Cut, e.Records)
	}
	if e.Manifest {
		return fmt.Sprintf("lshdb: database is corrupt: the store's manifest %s (Pebble's log of its table files) is damaged at byte %d, and %s whole (to byte %d): "+
			"opening the index as it is would take it back to the table files of the records before the damage, deleting the tables written since, "+
			"with the documents in them. No file was changed. Restore a backup; or keep a copy of the index (cp -a), "+
			"then lshdb check --repair opens it accepting the loss (Options.AcceptLogDamage), keeping a copy of the manifest beside it "+
			"(it fails if a later record had replaced a table the earlier ones list)",
			e.Log, e.Offset, after, e.End)
	}
	return fmt.Sprintf("lshdb: database is corrupt: the newest write-ahead log %s is damaged at byte %d, and %s whole (to byte %d): "+
		"opening the index as it is would drop the damaged record and every later one, which were acknowledged writes unless the machine "+
		"lost power before they were synced (a disk may keep a later write and lose an earlier one). "+
		"Keep a copy of the index first (cp -a); then lshdb check --repair opens it accepting the loss (Options.AcceptLogDamage), "+
		"keeping a copy of the log beside it (on read-only media: copy the index where it can be written, and repair the copy); or restore a backup",
		e.Log, e.Offset, after, e.End)
}

// kind names the log that is damaged.
func (e *LogDamageError) kind() string {
	if e.Manifest {
		return "manifest"
	}
	return "write-ahead log"
}

// Is makes a LogDamageError match ErrCorrupt.
func (e *LogDamageError) Is(target error) bool { return target == ErrCorrupt }

// Layout of Pebble's write-ahead logs (pebble/v2/record, part of its
// on-disk format): 32 KiB blocks of chunks, none crossing a block; a chunk
// is a header (masked CRC-32C of what follows the length field: 4 bytes,
// payload length: 2, chunk type: 1; then in the recyclable and "WAL sync"
// formats the log's number: 4, and in the latter a synced offset: 8) and
// its payload. A block's last bytes are zero when no header fits in them.
// A log ends at its end of file, or at a chunk of another log number: the
// "EOF trailer" a closed log ends with (its number plus one), or what an
// older log left in a recycled file. A record is one chunk of type full,
// or one first, any middle and one last.
const (
	logBlockSize     = 32 << 10
	legacyChunkHdr   = 7
	recycleChunkHdr  = 11
	walSyncChunkHdr  = 19
	chunkLegacyFull  = 1
	chunkLegacyFirst = 2
	chunkLegacyLast  = 4
	chunkRecycleFull = 5
	chunkWALSyncFull = 9
	chunkTypeMax     = 12
)

var logCRCTable = crc32.MakeTable(crc32.Castagnoli)

// logChunkCRC is the checksum Pebble stores for a chunk (its crc package's
// masked CRC-32C, LevelDB's mask).
func logChunkCRC(b []byte) uint32 {
	c := crc32.Update(0, logCRCTable, b)
	return (c>>15 | c<<17) + 0xa282ead8
}

// logScan follows one log, block by block, as Pebble's recovery reads it,
// to the first byte it does not read as a chunk of the log (end); past
// that, it looks at every offset for whole chunks of the log's number with
// a good checksum, the records that recovery would drop.
type logScan struct {
	num     uint32
	end     int64 // -1 until the readable part of the log ends before its end of file
	records int   // records beginning after end (full or first chunks)
	chunks  int   // chunks of the log after end
	last    int64 // where the last of those chunks ends
	trailer bool  // end is at the log's EOF trailer (a chunk of number num+1): its clean end
	own     bool  // end is at a chunk of this log (number num) that does not read: torn or damaged
	// cut is where the log must end for a strict reader to read it whole
	// up to the damage: end, or the start of the record end fell within
	// (recStart, while inRecord: the last chunk read did not end one).
	cut      int64
	recStart int64
	inRecord bool
	legacy   bool // the log is written in legacy chunks, with no log number (a MANIFEST)

	// The records after end, put together from their chunks as they are
	// found (a write-ahead log's: each a write batch) and decoded: the ids
	// their batches put and deleted, in log order, and how many of them
	// did not read (a chunk missing or damaged, a batch that does not
	// decode). The damaged record itself, at end, is not among them.
	rec     []byte
	recOpen bool  // rec holds a record's first chunks, its last still to come
	recNext int64 // where the next chunk of rec must begin
	puts    []string
	deletes []string
	unread  int
}

// chunkHeader returns the header size of a chunk type (0 if invalid), and
// whether the chunk begins a record.
func chunkHeader(typ byte) (int, bool) {
	switch {
	case typ == 0 || typ > chunkTypeMax:
		return 0, false
	case typ >= chunkWALSyncFull:
		return walSyncChunkHdr, (typ - chunkWALSyncFull) < 2
	case typ >= chunkRecycleFull:
		return recycleChunkHdr, (typ - chunkRecycleFull) < 2
	}
	return legacyChunkHdr, (typ - chunkLegacyFull) < 2
}

// block scans one block, b, which begins at off in the log.
func (s *logScan) block(off int64, b []byte) {
	i := 0
	if s.end < 0 {
		i = s.readable(off, b)
		if i == len(b) {
			return
		}
		s.end = off + int64(i)
		s.cut = s.end
		if s.inRecord {
			s.cut = s.recStart
		}
		if i+recycleChunkHdr <= len(b) {
			hdr, _ := chunkHeader(b[i+6])
			num := binary.LittleEndian.Uint32(b[i+7:])
			s.trailer = hdr >= recycleChunkHdr && num == s.num+1
			s.own = hdr >= recycleChunkHdr && num == s.num
		}
		i++ // NB: the chunk at the end is not one of the log's, or it is damaged
	}
	if s.legacy {
		s.legacyChunks(off, b, i)
		return
	}
	// NB: a chunk of the log has its number at 7: found by bytes.Index,
	// which scans at memory speed, a log of 1 GiB (MemTableSize) too.
	var num [4]byte
	binary.LittleEndian.PutUint32(num[:], s.num)
	for i+recycleChunkHdr <= len(b) {
		j := bytes.Index(b[i+7:], num[:])
		if j < 0 || i+j+recycleChunkHdr > len(b) {
			return
		}
		i += j
		// NB: legacy chunks carry no log number: what an older log left in
		// a recycled file would pass. Pebble writes WAL sync chunks.
		hdr, first := chunkHeader(b[i+6])
		n := i + hdr + int(binary.LittleEndian.Uint16(b[i+4:]))
		if hdr < recycleChunkHdr || n > len(b) || logChunkCRC(b[i+6:n]) != binary.LittleEndian.Uint32(b[i:]) {
			i++
			continue
		}
		s.chunks++
		if first {
			s.records++
		}
		s.gather(off+int64(i), chunkPosition(b[i+6]), b[i+hdr:n], off+int64(n))
		s.last = off + int64(n)
		i = n
	}
}

// gather takes a chunk of the log found after its damage, at at (ending
// at end), into the record it belongs to, and decodes each record it
// completes. A chunk that does not follow the one before it in its
// record (one between them did not read) leaves that record unread; a
// middle or last chunk with no first before it is the damaged record's.
func (s *logScan) gather(at int64, pos int, payload []byte, end int64) {
	switch pos {
	case chunkFull, chunkFirst:
		if s.recOpen {
			s.unread++ // NB: its last chunk did not read
		}
		s.rec, s.recOpen = append(s.rec[:0], payload...), true
	default:
		// NB: a chunk begins where the one before ends, or at the next
		// block when too few bytes were left in this one for a header.
		follows := at == s.recNext || at%logBlockSize == 0 && at > s.recNext && at-s.recNext < walSyncChunkHdr
		if !s.recOpen {
			return
		}
		if !follows {
			s.unread++
			s.recOpen = false
			return
		}
		s.rec = append(s.rec, payload...)
	}
	s.recNext = end
	if pos == chunkFull || pos == chunkLast {
		s.recOpen = false
		s.decode(s.rec)
	}
}

// decode takes the ids a write batch of the index puts (a Set of an id
// key) and deletes (a delete or an expiry sweep); a batch that does not
// decode is counted unread.
func (s *logScan) decode(rec []byte) {
	var puts, deletes []string
	ok := batchEntries(rec, func(kind pebble.InternalKeyKind, k []byte) {
		if len(k) == 0 || k[0] != codec.PrefixID {
			return
		}
		id, err := codec.ParseIDKey(k)
		if err != nil {
			return
		}
		switch kind {
		case pebble.InternalKeyKindSet:
			puts = append(puts, id)
		case pebble.InternalKeyKindDelete, pebble.InternalKeyKindSingleDelete, pebble.InternalKeyKindDeleteSized:
			deletes = append(deletes, id)
		}
	})
	if !ok {
		s.unread++
		return
	}
	s.puts, s.deletes = append(s.puts, puts...), append(s.deletes, deletes...)
}

// batchEntries calls fn with the kind and key of each entry of a write
// batch in Pebble's format (part of its write-ahead log's format, as
// pebble/v2/batchrepr reads it): a 12-byte header (sequence number,
// count), then each entry's kind, its key (a uvarint length and the
// bytes) and, for the kinds that carry one, its value the same way. It
// reports whether the whole batch read. NB: not batchrepr's reader, which
// indexes out of range on bytes that are not a batch (a varint past the
// end), and a damaged log's are not known to be one.
func batchEntries(rec []byte, fn func(kind pebble.InternalKeyKind, key []byte)) bool {
	if len(rec) < 12 {
		return false
	}
	b := rec[12:]
	str := func() ([]byte, bool) {
		n, k := binary.Uvarint(b)
		if k <= 0 || n > uint64(len(b)-k) {
			return nil, false
		}
		s := b[k : k+int(n)]
		b = b[k+int(n):]
		return s, true
	}
	for len(b) > 0 {
		kind := pebble.InternalKeyKind(b[0])
		if kind > pebble.InternalKeyKindMax {
			return false
		}
		b = b[1:]
		key, ok := str()
		if !ok {
			return false
		}
		switch kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindMerge, pebble.InternalKeyKindRangeDelete,
			pebble.InternalKeyKindRangeKeySet, pebble.InternalKeyKindRangeKeyUnset, pebble.InternalKeyKindRangeKeyDelete,
			pebble.InternalKeyKindDeleteSized, pebble.InternalKeyKindExcise:
			if _, ok := str(); !ok {
				return false
			}
		}
		fn(kind, key)
	}
	return true
}

// legacyChunks is block's search past the end for a log of legacy chunks
// (a MANIFEST), which carry no log number to look for: every offset from
// i on is tried as a chunk header (a type of the legacy format, a length
// within the block, a good checksum), and a chunk found is stepped over
// whole. Only a damaged block is tried offset by offset: a sound one
// after it is read chunk by chunk from its start.
func (s *logScan) legacyChunks(off int64, b []byte, i int) {
	for i+legacyChunkHdr <= len(b) {
		typ := b[i+6]
		n := i + legacyChunkHdr + int(binary.LittleEndian.Uint16(b[i+4:]))
		if typ == 0 || typ > chunkLegacyLast || n > len(b) || logChunkCRC(b[i+6:n]) != binary.LittleEndian.Uint32(b[i:]) {
			i++
			continue
		}
		s.chunks++
		if typ == chunkLegacyFull || typ == chunkLegacyFirst {
			s.records++
		}
		s.last = off + int64(n)
		i = n
	}
}

// readable returns where in b, the block at off, the log stops being
// readable, or len(b) if the whole block reads (its end padded with zeros,
// or the file ends in it on a chunk's end). It follows the records'
// starts (recStart, inRecord).
func (s *logScan) readable(off int64, b []byte) int {
	i := 0
	for i+legacyChunkHdr <= len(b) {
		sum := binary.LittleEndian.Uint32(b[i:])
		length := int(binary.LittleEndian.Uint16(b[i+4:]))
		typ := b[i+6]
		if sum == 0 && length == 0 && typ == 0 {
			// NB: as Pebble's reader: a block's last bytes are skipped if
			// too few for a recyclable header, or for a WAL sync header
			// and all zero.
			if i+recycleChunkHdr > len(b) || i+walSyncChunkHdr > len(b) && !slices.ContainsFunc(b[i:], func(c byte) bool { return c != 0 }) {
				return len(b)
			}
			return i
		}
		hdr, _ := chunkHeader(typ)
		if hdr == 0 || i+hdr > len(b) {
			return i
		}
		if hdr > legacyChunkHdr && binary.LittleEndian.Uint32(b[i+7:]) != s.num {
			return i // the EOF trailer, or an older log's chunk
		}
		n := i + hdr + length
		if n > len(b) || logChunkCRC(b[i+6:n]) != sum {
			return i
		}
		pos := chunkPosition(typ)
		if pos == chunkFull || pos == chunkFirst {
			s.recStart = off + int64(i)
		}
		s.inRecord = pos == chunkFirst || pos == chunkMiddle
		i = n
	}
	return len(b)
}

// A chunk's position in its record: the whole of it, its first chunk, one
// of its middle ones, or its last.
const (
	chunkFull = iota
	chunkFirst
	chunkMiddle
	chunkLast
)

// chunkPosition returns the position in its record of a chunk of a valid
// type (see chunkHeader): each format numbers its four types in order.
func chunkPosition(typ byte) int {
	return int(typ-chunkLegacyFull) % 4
}

// newestLogDamage reads the newest write-ahead log among names, the
// files in dir: the one that
// Pebble's recovery reads leniently (it checks older ones strictly), and
// returns a *LogDamageError if whole chunks of it follow a part that does
// not read, or if it ends on a chunk of its own that does not read (a
// torn or damaged last record, Records 0); nil if there is none or it is
// not damaged.
func newestLogDamage(fs vfs.FS, dir string, names []string) (*LogDamageError, error) {
	newest, name := wal.NumWAL(0), ""
	for _, n := range names {
		// NB: a log of several segments (index > 0) is WAL failover's,
		// which lshdb does not use.
		if num, index, ok := wal.ParseLogFilename(n); ok && index == 0 && (name == "" || num > newest) {
			newest, name = num, n
		}
	}
	if name == "" {
		return nil, nil
	}
	path := fs.PathJoin(dir, name)
	s, err := scanLog(fs, path, uint32(newest))
	switch {
	case err != nil:
		return nil, err
	case s.chunks == 0 && s.own:
		// NB: the last record, or its last chunks, torn or damaged, and
		// nothing after it that reads: Pebble drops it as a torn tail,
		// and that took a synced batch without a word when its damage
		// was in its last 32 KiB (an operator's review, DR1).
		return &LogDamageError{Log: path, Offset: s.end, End: s.end}, nil
	case s.chunks == 0:
		return nil, nil
	}
	return &LogDamageError{Log: path, Offset: s.end, Records: s.records, End: s.last, Puts: s.puts, Deletes: s.deletes, Unread: s.unread + 1}, nil
}

// scanLog scans the log at path, of number num.
func scanLog(fs vfs.FS, path string, num uint32) (*logScan, error) {
	return scanWith(fs, path, &logScan{num: num, end: -1})
}

// scanWith scans the log at path with s.
func scanWith(fs vfs.FS, path string, s *logScan) (*logScan, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := make([]byte, logBlockSize)
	for off := int64(0); ; off += logBlockSize {
		n, err := io.ReadFull(f, buf)
		if n > 0 {
			s.block(off, buf[:n])
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if s.recOpen {
		s.unread++ // NB: the log ends before the record's last chunk
		s.recOpen = false
	}
	return s, nil
}

// olderLogDamageError is the *LogDamageError (Older) of the log that
// olderLogScan names in dir, nil if none.
func olderLogDamageError(fs vfs.FS, dir string) *LogDamageError {
	s := olderLogScan(fs, dir)
	if s == nil {
		return nil
	}
	end := s.last
	if s.chunks == 0 {
		end = s.end
	}
	return &LogDamageError{Log: fs.PathJoin(dir, s.name), Offset: s.end, Records: s.records, End: end, Older: true, Cut: s.cut, Puts: s.puts, Deletes: s.deletes, Unread: s.unread + 1}
}

// acceptOlderLogDamage is acceptLogDamage for the write-ahead logs older
// than the newest, once Pebble's replay failed: with o.AcceptLogDamage, on
// a writable open, the first that does not read whole
// (olderLogDamageError) has a copy kept beside it and is cut at the start
// of its damaged record, which a strict reader reads as a clean end, and
// the damage accepted is returned. nil if there is none, or the open is
// not to accept it (Open then says what is damaged). Open calls it again
// for as long as its replay fails and it finds one.
func acceptOlderLogDamage(o Options, dir string) (*LogDamageError, error) {
	if !o.AcceptLogDamage || o.ReadOnly {
		return nil, nil
	}
	names, err := o.fs.List(dir)
	if err != nil || !ownFormat(names) {
		return nil, nil
	}
	dmg := olderLogDamageError(o.fs, dir)
	if dmg == nil {
		return nil, nil
	}
	kept, err := keepDamagedLog(o.fs, dir, dmg)
	if err != nil {
		return nil, err
	}
	at := *dmg
	at.Offset = dmg.Cut
	if err := cutLogAt(o.fs, dir, &at, kept); err != nil {
		return nil, err
	}
	dmg.Kept = kept
	o.Logger.Warn("lshdb: opening an index whose write-ahead log older than the newest is damaged: the damaged record and those after it in that log are dropped (Options.AcceptLogDamage)",
		"log", dmg.Log, "offset", dmg.Offset, "cut", dmg.Cut, "records_after", dmg.Records, "kept", dmg.Kept)
	return dmg, nil
}

// namedScan is a log's scan, and the log's name.
type namedScan struct {
	*logScan
	name string
}

// olderLogScan scans the first write-ahead log in dir, older than the
// newest, that stops reading within a chunk (not at its EOF trailer, nor
// at its end), and returns its scan (where it stops, s.end), or nil if
// none: Pebble replays a log older than the newest only whole, and its
// error ("error when replaying WAL: … unexpected EOF") named no log (a
// crash-safety review).
func olderLogScan(fs vfs.FS, dir string) *namedScan {
	names, err := fs.List(dir)
	if err != nil {
		return nil
	}
	type log struct {
		num  wal.NumWAL
		name string
	}
	var logs []log
	for _, n := range names {
		if num, index, ok := wal.ParseLogFilename(n); ok && index == 0 {
			logs = append(logs, log{num, n})
		}
	}
	slices.SortFunc(logs, func(a, b log) int { return cmp.Compare(a.num, b.num) })
	for _, l := range logs[:max(len(logs)-1, 0)] {
		// NB: only a log that stops reading within a chunk, not at its
		// EOF trailer: Pebble reads an empty log (an open killed before
		// its first write leaves one), and one that ends on a record's
		// end, as whole, and naming one of those named the wrong log (a
		// maintainer's review).
		s, err := scanLog(fs, fs.PathJoin(dir, l.name), uint32(l.num))
		if err == nil && s.end >= 0 && !s.trailer {
			return &namedScan{s, l.name}
		}
	}
	return nil
}

// acceptLogDamage checks the newest write-ahead log of the index in dir
// before Pebble replays it: it returns the *LogDamageError if whole
// records of it follow a part that does not read, unless
// o.AcceptLogDamage, when it returns the damage it accepted: a writable
// open keeps a copy of the log beside it (Pebble's recovery recycles
// it) and cuts the log at the damage; a read-only one changes nothing
// (Pebble's recovery drops the records from the damage on in memory).
//
// NB: only the continuation of the damaged record reading whole is no
// refusal: after a power failure that is the last batch, its earlier
// block lost and a later one kept, which was never synced, so never
// acknowledged (every open refused such an index until check --repair);
// damage to the last record's first chunks is dropped as a torn tail
// drops it, which a warning says.
func acceptLogDamage(o Options, dir string) (*LogDamageError, error) {
	names, err := o.fs.List(dir)
	if err != nil || !ownFormat(names) {
		return nil, nil // NB: Pebble's open says what is wrong with dir
	}
	dmg, err := newestLogDamage(o.fs, dir, names)
	if err != nil {
		return nil, fmt.Errorf("lshdb: reading the newest write-ahead log of %s: %w", dir, err)
	}
	if dmg == nil {
		return nil, nil
	}
	if dmg.Records == 0 {
		o.Logger.Warn("lshdb: the last record of the newest write-ahead log does not read whole (torn by a crash or a power failure, or damaged): it is dropped, as a torn write is",
			"log", dmg.Log, "offset", dmg.Offset, "end", dmg.End)
		return nil, nil
	}
	if !o.AcceptLogDamage {
		return nil, dmg
	}
	if !o.ReadOnly {
		kept, err := cutDamagedLog(o.fs, dir, dmg)
		if err != nil {
			return nil, err
		}
		dmg.Kept = kept
	}
	o.Logger.Warn("lshdb: opening an index whose newest write-ahead log is damaged: the damaged record and those after it are dropped (Options.AcceptLogDamage)",
		"log", dmg.Log, "offset", dmg.Offset, "records_after", dmg.Records, "end", dmg.End, "kept", dmg.Kept)
	return dmg, nil
}

// acceptManifestDamage checks the store's current MANIFEST before Pebble
// reads it, as acceptLogDamage checks the newest write-ahead log: it
// returns a *LogDamageError (Manifest set) if whole records of it follow
// a part that does not read, unless o.AcceptLogDamage, when it returns
// the damage it accepted, a writable open having kept a copy of the
// manifest and cut it at the damage.
//
// NB: Pebble syncs each record of its manifest before it writes the
// next, so a crash, or a power failure, can leave only the last record
// torn: whole records after a damaged one mean the bytes were changed
// after they were written. (A new manifest's first two records are
// synced together, but the marker names it only once they are.)
//
// A torn last record alone is no damage to refuse: Pebble drops it as it
// reads. Its warning is returned as torn, for the caller to log once the
// store has opened: logged here, it said "it is dropped, as a torn write
// is" before an open that then failed on the same manifest (cut to half
// its size: an adversarial review's A5).
func acceptManifestDamage(o Options, dir string, popts *pebble.Options, walCut bool) (dmg *LogDamageError, torn func(), err error) {
	names, err := o.fs.List(dir)
	if err != nil || !ownFormat(names) {
		return nil, nil, nil // NB: Pebble's open says what is wrong with dir
	}
	desc, err := pebble.Peek(dir, o.fs)
	if err != nil || !desc.Exists || desc.ManifestFilename == "" {
		return nil, nil, nil // NB: Pebble's open says what is wrong, or markerMissing did
	}
	s, err := scanWith(o.fs, desc.ManifestFilename, &logScan{end: -1, legacy: true})
	if errors.Is(err, iofs.ErrNotExist) {
		return nil, nil, nil // NB: Pebble's open says the manifest is missing
	}
	if err != nil {
		return nil, nil, fmt.Errorf("lshdb: reading the manifest of %s: %w", dir, err)
	}
	if s.end < 0 {
		return nil, nil, nil
	}
	dmg = &LogDamageError{Log: desc.ManifestFilename, Offset: s.end, Records: s.records, End: s.last, Manifest: true}
	if dmg.Records == 0 {
		name, off := dmg.Log, dmg.Offset // NB: not dmg, which the return sets nil
		return nil, func() {
			o.Logger.Warn("lshdb: the last record of the store's manifest does not read whole (torn by a crash or a power failure, or damaged): it was dropped, as a torn write is",
				"manifest", name, "offset", off)
		}, nil
	}
	if !o.AcceptLogDamage {
		return nil, nil, dmg
	}
	if !o.ReadOnly {
		// NB: a writable open of Pebble's writes a new manifest from what
		// it read before it is known whether the store opens as of the
		// records before the damage (a later record may have replaced a
		// table they list, or the lshdb manifest may be in a table added
		// since): a read-only open finds out first, changing nothing.
		if err := opensBeforeDamage(dir, popts); err != nil {
			// NB: the write-ahead log's damage is accepted first (with a
			// copy kept): "no file was changed" was then untrue (a
			// maintainer's review).
			changed := "no file was changed"
			if walCut {
				changed = "the damaged write-ahead log was cut already (its copy is kept beside it), and no other file was changed"
			}
			return nil, nil, fmt.Errorf("%w: %s: the store's manifest %s is damaged at byte %d, and the index does not open as of its records before the damage either, so accepting the loss does not help (%w): restore a backup; %s",
				ErrCorrupt, dir, dmg.Log, dmg.Offset, firstLine{err}, changed)
		}
		// NB: only copied here: the manifest is cut once the open has
		// succeeded (cutManifest). Pebble reads it to the damage alone.
		kept, err := keepDamagedLog(o.fs, dir, dmg)
		if err != nil {
			return nil, nil, err
		}
		dmg.Kept = kept
	}
	o.Logger.Warn("lshdb: opening an index whose manifest is damaged: the damaged record and those after it are dropped, and the tables they added with them (Options.AcceptLogDamage)",
		"manifest", dmg.Log, "offset", dmg.Offset, "records_after", dmg.Records, "end", dmg.End, "kept", dmg.Kept)
	return dmg, nil, nil
}

// opensBeforeDamage opens the store in dir read-only, as Pebble reads a
// damaged manifest (to the damage), and checks that it holds an lshdb
// index.
func opensBeforeDamage(dir string, popts *pebble.Options) error {
	ro := popts.Clone()
	ro.ReadOnly = true
	pdb, err := pebble.Open(dir, ro)
	if err != nil {
		return err
	}
	defer pdb.Close()
	_, closer, err := pdb.Get(codec.ManifestKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return errors.New("no lshdb index in its tables")
	}
	if err != nil {
		return err
	}
	return closer.Close()
}

// cutManifest ends an accepting writable open of a store whose manifest
// is damaged (acceptManifestDamage), once it succeeded: the manifest is
// cut at the damage if Pebble still has it as its current one, so that
// the next open does not find the damage again (Pebble writes a new
// manifest at its next change of tables, and never appends to the one it
// read).
func cutManifest(fs vfs.FS, dir string, dmg *LogDamageError) error {
	if dmg == nil || dmg.Kept == "" {
		return nil
	}
	desc, err := pebble.Peek(dir, fs)
	if err != nil || desc.ManifestFilename != dmg.Log {
		return nil // NB: Pebble wrote a new one already
	}
	return cutLogAt(fs, dir, dmg, dmg.Kept)
}

// cutDamagedLog keeps a copy of the damaged log beside it, under a name no
// other file has, then cuts the log at the damage, so that Pebble's
// recovery reads the records before it and ends there (left as it is,
// Pebble's own read-ahead sometimes confirms the damage, when a later
// chunk's synced offset passes it, and fails the open). It returns the
// copy's path. Each step is synced before the next: a crash leaves the
// damaged log (the open is refused again, and may be made again) or the
// cut one with its copy.
func cutDamagedLog(fs vfs.FS, dir string, dmg *LogDamageError) (string, error) {
	kept, err := keepDamagedLog(fs, dir, dmg)
	if err != nil {
		return "", err
	}
	if err := cutLogAt(fs, dir, dmg, kept); err != nil {
		return "", err
	}
	return kept, nil
}

// keepDamagedLog copies the damaged log into dir, synced, under a name no
// other file has, and returns the copy's path.
func keepDamagedLog(fs vfs.FS, dir string, dmg *LogDamageError) (string, error) {
	// NB: a write-ahead log's copy is lshdb-damaged-NNNNNN.log, a
	// manifest's lshdb-damaged-MANIFEST-NNNNNN.
	ext := ".log"
	if dmg.Manifest {
		ext = ""
	}
	base := fs.PathJoin(dir, damagedLogPrefix+strings.TrimSuffix(fs.PathBase(dmg.Log), ext))
	kept := base + ext
	for i := 2; ; i++ {
		if _, err := fs.Stat(kept); errors.Is(err, iofs.ErrNotExist) {
			break
		}
		// NB: an index restored from a backup may reach the log's number
		// again: an earlier copy is kept too.
		kept = fmt.Sprintf("%s-%d%s", base, i, ext)
	}
	if err := copyFile(fs, dmg.Log, kept); err != nil {
		fs.Remove(kept)
		return "", fmt.Errorf("lshdb: keeping a copy of the damaged %s %s (nothing changed): %w", dmg.kind(), dmg.Log, err)
	}
	if err := syncDir(fs, dir); err != nil {
		return "", fmt.Errorf("lshdb: keeping a copy of the damaged %s %s (nothing changed): %w", dmg.kind(), dmg.Log, err)
	}
	return kept, nil
}

// cutLogAt replaces the damaged log with the part of its copy, kept,
// before the damage.
func cutLogAt(fs vfs.FS, dir string, dmg *LogDamageError, kept string) error {
	tmp := kept + ".tmp"
	err := copyPrefix(fs, kept, tmp, dmg.Offset)
	if err == nil {
		err = fs.Rename(tmp, dmg.Log)
	}
	if err == nil {
		err = syncDir(fs, dir)
	}
	if err != nil {
		fs.Remove(tmp)
		return fmt.Errorf("lshdb: cutting the damaged %s %s at its damage (its copy is %s): %w", dmg.kind(), dmg.Log, kept, err)
	}
	return nil
}

// damagedLogPrefix begins the name of the copy of a damaged log that
// cutDamagedLog keeps (Pebble's own parsers of file names take none of
// them: a log's name is a number).
const damagedLogPrefix = "lshdb-damaged-"

// damagedLogCopies returns the paths of the copies of damaged logs that
// cutDamagedLog kept in dir, and of damaged options files that
// setAsideDamagedOptions set aside (Info.DamagedLogCopies).
func damagedLogCopies(fs vfs.FS, dir string) []string {
	names, _ := fs.List(dir)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, damagedLogPrefix) && (strings.HasSuffix(n, ".log") || (strings.HasPrefix(n, damagedLogPrefix+"OPTIONS-") || strings.HasPrefix(n, damagedLogPrefix+"MANIFEST-")) && !strings.HasSuffix(n, ".tmp")) {
			out = append(out, fs.PathJoin(dir, n))
		}
	}
	slices.Sort(out)
	return out
}

// ownFormat says whether the store whose files are names is in one of
// Pebble's format versions this build opens: its format marker names one
// at most formatMajorVersion. The log of another store (a newer
// Pebble's, which may write chunks of kinds this build does not know;
// LevelDB's) is not read as Pebble 2.1.7's, let alone cut: Pebble refuses
// the store.
func ownFormat(names []string) bool {
	for _, n := range names {
		rest, ok := strings.CutPrefix(n, "marker.format-version.")
		if !ok {
			continue
		}
		_, v, ok := strings.Cut(rest, ".")
		ver, err := strconv.ParseUint(v, 10, 64)
		return ok && err == nil && ver <= uint64(formatMajorVersion)
	}
	return false
}

// LogDamage returns the damage to the newest write-ahead log that Open
// accepted (Options.AcceptLogDamage): what it dropped, and where it kept
// a copy of the log. Nil if it found none (or on Redis).
func (db *DB) LogDamage() *LogDamageError { return db.logDamage }

// OlderLogDamage returns the damage to the write-ahead logs older than the
// newest that Open accepted (Options.AcceptLogDamage; LogDamageError.Older
// is set), in the order it cut them: where it cut each log, what it
// dropped, and where it kept a copy of the log. Nil if it found none (or
// on Redis).
func (db *DB) OlderLogDamage() []*LogDamageError { return db.olderLogDamage }

// withCut returns err, saying the older logs already cut (cut) when it is
// an older log's damage, or when there are some.
func withCut(err error, cut []*LogDamageError) error {
	if len(cut) == 0 {
		return err
	}
	if le, ok := err.(*LogDamageError); ok && le.Older {
		le.CutBefore = cut
		return le
	}
	return fmt.Errorf("%w (this open had cut already %s)", err, cutLogs(cut))
}

// cutLogs names the older logs an open cut, where, and their copies.
func cutLogs(cut []*LogDamageError) string {
	var logs []string
	for _, c := range cut {
		logs = append(logs, fmt.Sprintf("%s at byte %d (its copy %s)", c.Log, c.Cut, c.Kept))
	}
	return strings.Join(logs, ", ")
}

// ManifestDamage returns the damage to the store's manifest that Open
// accepted (Options.AcceptLogDamage; LogDamageError.Manifest is set):
// what it dropped, and where it kept a copy of the manifest. Nil if it
// found none (or on Redis).
func (db *DB) ManifestDamage() *LogDamageError { return db.manifestDamage }

// setAsideDamagedOptions checks the store's newest OPTIONS file, which
// Pebble reads at every open: one that does not parse (a flipped or
// garbled byte) made the index unopenable, said as damage that no record
// mends, with the advice to restore a backup, though it holds Pebble's
// settings only, and no document (an operator's review, O2). A writable
// open sets it aside as lshdb-damaged-OPTIONS-NNNNNN, says so in the log,
// and Pebble's open writes it again; a read-only one refuses, as
// Repairable damage (check --repair opens writable). An OPTIONS file that
// parses but names another merger or comparer is not this function's:
// Pebble's open refuses it (not an index).
func setAsideDamagedOptions(o Options, dir string, popts *pebble.Options) error {
	desc, err := pebble.Peek(dir, o.fs)
	if err != nil || desc.OptionsFilename == "" {
		return nil // NB: Pebble's open says what is wrong, or writes one
	}
	f, err := o.fs.Open(desc.OptionsFilename)
	if err != nil {
		return nil
	}
	data, err := io.ReadAll(f)
	f.Close()
	if err != nil {
		return nil
	}
	// NB: Pebble's parser marks what does not parse as corruption; a
	// merger, comparer or WAL directory other than this open's is a plain
	// error, which Pebble's open gives (ErrNotIndex for a merger).
	perr := popts.CheckCompatibility(dir, string(data))
	if perr == nil || !pebble.IsCorruptionError(perr) {
		return nil
	}
	name := o.fs.PathBase(desc.OptionsFilename)
	if o.ReadOnly {
		return corruptRepairable("%s: the store's options file %s is damaged (%v): it holds Pebble's settings only, no document", dir, name, firstLine{perr})
	}
	// NB: set aside, and a sound one written in its place at once (what
	// Pebble's open writes: the options in effect), so that the store
	// never lacks one: an open that then failed for another reason left a
	// store without one, which an input walk no longer knew as a store.
	aside := o.fs.PathJoin(dir, damagedLogPrefix+name)
	tmp := o.fs.PathJoin(dir, damagedLogPrefix+name+".tmp")
	if err := writeSynced(o.fs, tmp, []byte(popts.String())); err != nil {
		o.fs.Remove(tmp)
		return fmt.Errorf("lshdb: writing the options file %s anew: %w", desc.OptionsFilename, err)
	}
	if err := o.fs.Rename(desc.OptionsFilename, aside); err != nil {
		o.fs.Remove(tmp)
		return fmt.Errorf("lshdb: setting aside the damaged options file %s: %w", desc.OptionsFilename, err)
	}
	if err := o.fs.Rename(tmp, desc.OptionsFilename); err != nil {
		return fmt.Errorf("lshdb: writing the options file %s anew: %w", desc.OptionsFilename, err)
	}
	if d, err := o.fs.OpenDir(dir); err == nil {
		d.Sync()
		d.Close()
	}
	o.Logger.Warn("lshdb: the store's options file was damaged: set aside, and written again (it holds Pebble's settings only, no document)", "file", desc.OptionsFilename, "kept", aside, "error", firstLine{perr})
	return nil
}

// writeSynced writes data to a new file named path, synced.
func writeSynced(fs vfs.FS, path string, data []byte) error {
	f, err := fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
