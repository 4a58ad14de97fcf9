package main

// info: the cheap facts about an index (C24), where stats is the full scan.

import (
	"fmt"
	"math"
	"strings"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/httpapi"
	"github.com/spf13/cobra"
)

// infoJSON is the output of info --output json: the keys stats uses for
// the same facts, and the rest of the manifest's parameters.
type infoJSON struct {
	Docs           uint64   `json:"docs"`
	Expired        uint64   `json:"expired,omitempty"` // of docs: past their expiry, awaiting the sweep
	Threshold      float64  `json:"threshold"`
	Bands          int      `json:"bands"`
	Rows           int      `json:"rows"`
	NumPerm        int      `json:"num_perm"`
	Scheme         string   `json:"scheme"`
	Seed           uint64   `json:"seed"`
	Shingle        string   `json:"shingle"`
	ShingleSize    int      `json:"shingle_size"`
	Bag            bool     `json:"bag"`
	Normalization  string   `json:"normalization"`
	StopWords      []string `json:"stop_words"`
	StoreText      bool     `json:"store_text"`
	Storage        string   `json:"storage"`
	FormatVersion  int      `json:"format_version"`
	ExpectedRecall float64  `json:"expected_recall"` // P(candidate) at the threshold, from the S-curve
	DiskBytes      uint64   `json:"disk_bytes"`
	TempBytes      uint64   `json:"temp_bytes,omitempty"`
	// RecycledLogBytes is db.Info.RecycledLogBytes.
	RecycledLogBytes uint64 `json:"recycled_log_bytes"`
	// LogBytes is db.Info.LogBytes.
	LogBytes uint64 `json:"log_bytes"`
	// DamagedLogCopies is db.Info.DamagedLogCopies.
	DamagedLogCopies []string `json:"damaged_log_copies,omitempty"`
	// UpgradeUncompacted is db.Info.UpgradeUncompacted.
	UpgradeUncompacted bool `json:"upgrade_uncompacted,omitempty"`
	// RestoreCopy and RestoreCopyBytes are db.Info's: a restore's copy
	// beside the index, not part of disk_bytes.
	RestoreCopy      string `json:"restore_copy,omitempty"`
	RestoreCopyBytes uint64 `json:"restore_copy_bytes,omitempty"`
	// Instance names the index (db.Info): a pairs file made on another
	// is refused.
	Instance string `json:"instance,omitempty"`
	// Origin is, in a backup, the index it copies and the state it
	// copied (db.Info.Origin).
	Origin                *httpapi.OriginJSON `json:"origin,omitempty"`
	*httpapi.EstimateJSON                     // storage none only
}

func infoOut(in *db.Info) infoJSON {
	p := in.Params
	return infoJSON{Docs: in.Docs, Expired: in.Expired, Threshold: p.Threshold, Bands: p.Bands.B, Rows: p.Bands.R, NumPerm: p.NumPerm,
		Scheme: p.Scheme.String(), Seed: p.Seed, Shingle: p.Shingle.String(), ShingleSize: p.ShingleSize, Bag: p.Bag,
		Normalization: p.Normalization.String(), StopWords: nonNil(p.StopWords), StoreText: p.StoreText, Storage: p.Storage,
		FormatVersion: p.FormatVersion, ExpectedRecall: p.Bands.Probability(p.Threshold), DiskBytes: in.DiskBytes, TempBytes: in.TempBytes, LogBytes: in.LogBytes, RecycledLogBytes: in.RecycledLogBytes,
		DamagedLogCopies: in.DamagedLogCopies, UpgradeUncompacted: in.UpgradeUncompacted, RestoreCopy: in.RestoreCopy, RestoreCopyBytes: in.RestoreCopyBytes, Instance: in.Instance, Origin: httpapi.OriginOut(in.Origin), EstimateJSON: httpapi.EstimateOut(p)}
}

func (a *app) infoCmd() *cobra.Command {
	return &cobra.Command{
		Use: "info --db DIR",
		Example: `  # Parameters, documents and size on disk, at once on any index
  lshdb info --db idx

  # The same as one JSON object (sizes in bytes)
  lshdb info --db idx --output json`,
		Short: "Parameters, document count and size on disk, without a scan",
		Long: `The index's parameters (from its manifest), its document count (kept by
every write) and its size on disk, in human units (KiB, MiB, GiB). It reads
no records, so it answers at once on any index; stats scans the whole store
for bucket sizes and bytes by record kind. With --output json: one object,
sizes in bytes.`,
		Args: nArgs(0),
		RunE: func(c *cobra.Command, args []string) error {
			return a.withIndex(func(d index) error {
				in, err := d.Info()
				if err != nil {
					return err
				}
				if a.json() {
					return a.emitJSON(infoOut(in))
				}
				p := in.Params
				fmt.Fprintln(a.stdout, paramsLine(p))
				fmt.Fprintf(a.stdout, "P(candidate) at the threshold: %s (S-curve)\n", probability(p.Bands.Probability(p.Threshold)))
				if err := a.printNoneNote(p); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "index format: %d%s\n", p.FormatVersion, upgradeHint(a.dbDir, p))
				fmt.Fprintf(a.stdout, "documents: %d%s\n", in.Docs, expiredNote(in.Expired))
				if in.Instance != "" {
					// NB: a pairs file names the instance it was made on.
					fmt.Fprintf(a.stdout, "instance: %s\n", in.Instance)
				}
				if o := in.Origin; o != nil {
					fmt.Fprintf(a.stdout, "backup of: instance %s%s\n", o.Instance, originState(o))
				}
				if in.Redis {
					// NB: no size here: stats measures the keys' memory (a scan).
					_, err = fmt.Fprintln(a.stdout, "storage: Redis (no files of its own; lshdb stats gives the memory its keys take)")
					return err
				}
				if _, err = fmt.Fprintf(a.stdout, "size on disk: %s%s\n", humanBytes(in.DiskBytes), diskParts(in)); err != nil || in.RestoreCopy == "" {
					return err
				}
				// NB: hidden beside the index, as large as the backup,
				// and said nowhere (an operator's review, OP-2).
				_, err = fmt.Fprintf(a.stdout, "beside it: %s, a restore's copy of a backup (%s, not counted above), of a restore into this index under way or killed while it copied: the next restore into it, or the next command that writes to it, removes a killed one that this host made (else remove it once no restore runs)\n",
					escControls(in.RestoreCopy), humanBytes(in.RestoreCopyBytes))
				return err
			})
		},
	}
}

// originState describes the state of its original a backup copied.
func originState(o *db.Origin) string {
	if !o.Instant {
		return " (a Redis index, as read document by document)"
	}
	return fmt.Sprintf(" when it held %d documents of %d written", o.Docs, o.Written)
}

// humanBytes writes n in binary units: "512 B", "1.5 KiB", "12.3 MiB",
// "1.7 GiB" (one decimal from KiB up).
func humanBytes(n uint64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	e := min(int(math.Log2(float64(n))/10), len(units))
	v := float64(n) / math.Pow(1024, float64(e))
	if math.Round(v*10)/10 >= 1024 && e < len(units) { // 1023.96 KiB prints as 1.0 MiB
		e, v = e+1, v/1024
	}
	return fmt.Sprintf("%.1f %s", v, units[e-1])
}

// upgradeHint says, after a text index's format, when lshdb upgrade would
// give it the signature sketches of format 5 (which pairs reads instead
// of re-shingling every candidate's text); "" otherwise (a Redis index
// keeps its format).
func upgradeHint(dir string, p db.Params) string {
	if p.Storage != db.StorageText || p.FormatVersion >= codec.SketchFormatVersion || db.IsRedisURL(dir) {
		return ""
	}
	return fmt.Sprintf(" (lshdb upgrade takes it to %d, whose stored sketches make pairs about twice as fast)", codec.SketchFormatVersion)
}

// diskParts says what of an index's size on disk is not its data: its
// temporary files and the write-ahead logs kept for reuse (" (…)"), or "".
//
// NB: a killed build's tables once made an index look 13 times its size,
// and nothing said why; the logs kept for reuse made a small index's
// compact look as if it did nothing (15.6 MiB, 2 MiB of it tables).
func diskParts(in *db.Info) string {
	var parts []string
	if in.TempBytes > 0 {
		parts = append(parts, humanBytes(in.TempBytes)+" of it temporary files: of a build, upgrade or pairs run under way, or left by a killed one, which the next command that writes (a build's or an upgrade's: run a killed upgrade again) or the next pairs run (a pairs run's, once a minute old) removes")
	}
	if significantLogs(in) {
		parts = append(parts, humanBytes(in.LogBytes)+" of it write-ahead logs: allocated ahead for the writes to come; a compact frees them until the next write (a process that serves the index keeps its own)")
	}
	if in.UpgradeUncompacted {
		// NB: an upgrade killed after its ingest left an index at 14x its
		// size, and nothing said why (a compatibility review, C2).
		parts = append(parts, "with the old records of an upgrade that was stopped, or had no room, before it compacted them away: lshdb upgrade (again) or lshdb compact frees them")
	}
	if len(in.DamagedLogCopies) > 0 {
		parts = append(parts, fmt.Sprintf("and copies of damaged files (write-ahead logs, options) that an open or check --repair kept, to remove once examined: %s", strings.Join(escAll(in.DamagedLogCopies), " ")))
	}
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, "; ") + ")"
}

// significantLogs reports whether the write-ahead logs are worth a word
// beside an index's size: at least 1 MiB and a quarter of it.
func significantLogs(in *db.Info) bool {
	return in.LogBytes >= 1<<20 && 4*in.LogBytes >= in.DiskBytes
}

// expiredNote is what info adds to its document count when some of them
// have expired: they are counted until the expiry sweep removes them
// (and a read-only command's open does not sweep).
func expiredNote(n uint64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them expired, awaiting the sweep: never returned)", n)
}
