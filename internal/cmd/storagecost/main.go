// Command storagecost measures what each candidate encoding of a stored
// document would cost, to choose the storage format v2 (issue 13). For
// each corpus it prints a Markdown table of bytes per document and bytes
// per input-text byte, with encode and decode times, for:
//
//   - today's (format v1) payload: the shingle set at 8 bytes per
//     shingle, and the whole doc record as codec.AppendDocRecord encodes
//     it, without and with the text;
//   - the signature alone (the `none` mode);
//   - the text raw, and compressed per record with zstd (SpeedFastest,
//     SpeedDefault; no dictionary, a dictionary trained by
//     klauspost/compress/dict, and a raw dictionary of concatenated sample
//     texts) and with s2 (without and with the raw dictionary);
//   - the text compressed in blocks of consecutive records, as an LSM's
//     block compression would see a text column: zstd on 32 KiB and 4 KiB
//     blocks, and snappy (s2's snappy-compatible encoder) on 4 KiB blocks,
//     Pebble's default block size and compression;
//   - the `sets` mode candidates: the top 32 bits of each 64-bit shingle
//     hash (de-duplicated), raw, delta-coded with uvarint, with group
//     varint (a tag byte per 4 gaps) and with Golomb-Rice bit packing,
//     against the information-theoretic bound log2 C(2^32, n).
//
// It also times what verifying a candidate from stored text costs
// (decompress, re-shingle and hash) against decoding today's stored set,
// and measures how 32-bit hashing changes exact Jaccard: for the pairs at
// J ≥ 0.5 under 64-bit sets (allpairs.Join on a subset), the largest and
// mean absolute difference of the 32-bit-set Jaccard.
//
// Run it from the module (the shared corpora are ../shared/corpora beside
// it; a corpus that is absent is skipped with a note):
//
//	GOMAXPROCS=1 go run ./internal/cmd/storagecost [-corpora a,b] [-gen N] [-max N] [-pairs-docs N] [-dict BYTES] [-train BYTES]
//
// With the defaults (four shared corpora, the first 20,000 documents of
// each, and 20,000 generated documents) it takes about two minutes on one
// core.
//
// Sizes and times are measured on the documents not used to train the
// dictionaries (9 in 10). Times are wall-clock (encoding one pass; decoding
// and verifying the fastest of three), on whatever else the machine is
// doing: read them as orders of magnitude.
package main

import (
	"bytes"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/klauspost/compress/dict"
	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"

	"github.com/lshdb/lshdb/codec"
	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
	"github.com/lshdb/lshdb/minhash"
)

type config struct {
	max       int // documents per corpus (the first ones)
	pairsDocs int // documents the 32-bit Jaccard check joins
	dictSize  int // bytes of each dictionary
	trainMax  int // most bytes of training samples
}

func main() {
	corpora := flag.String("corpora", "kjv-verses,gcide,debian-descriptions,scancode-licenses", "shared corpora to measure, comma-separated (\"\" for none)")
	genN := flag.Int("gen", 20000, "documents of the generated corpus (0 for none)")
	var cfg config
	flag.IntVar(&cfg.max, "max", 20000, "measure at most the first N documents of each corpus")
	flag.IntVar(&cfg.pairsDocs, "pairs-docs", 5000, "documents (the first ones) whose pairs at J >= 0.5 check 32-bit hashing")
	flag.IntVar(&cfg.dictSize, "dict", 64<<10, "dictionary size in bytes")
	flag.IntVar(&cfg.trainMax, "train", 2<<20, "most bytes of sample text to build a dictionary from")
	flag.Parse()
	start := time.Now()
	fmt.Printf("storagecost: %s, GOMAXPROCS=%d; wall-clock times: encoding one pass, decoding and verifying the fastest of %d passes\n", runtime.Version(), runtime.GOMAXPROCS(0), decodeRuns)
	for name := range strings.SplitSeq(*corpora, ",") {
		if name = strings.TrimSpace(name); name == "" {
			continue
		}
		docs, err := corpus.Shared(name, 0)
		if errors.Is(err, corpus.ErrNoShared) {
			fmt.Printf("\n## %s\n\nskipped: %v\n", name, err)
			continue
		}
		if err != nil {
			fail(err)
		}
		what := fmt.Sprintf("all %d documents", len(docs))
		if cfg.max > 0 && len(docs) > cfg.max {
			what = fmt.Sprintf("the first %d of %d documents (-max)", cfg.max, len(docs))
			docs = docs[:cfg.max]
		}
		texts := make([]string, len(docs))
		ids := make([]string, len(docs))
		for i, d := range docs {
			texts[i], ids[i] = d.Text, d.ID
		}
		t0 := time.Now()
		if err := measure(os.Stdout, name, what, ids, texts, cfg); err != nil {
			fail(err)
		}
		fmt.Printf("\n(%s: %v)\n", name, time.Since(t0).Round(time.Second))
	}
	if *genN > 0 {
		sources, err := corpus.SampleTexts()
		if err != nil {
			fail(err)
		}
		var ids, texts []string
		for d := range gen.Stream(gen.Options{N: *genN, Sources: sources}) {
			ids, texts = append(ids, d.ID), append(texts, d.Text)
		}
		what := fmt.Sprintf("%d documents of gen.Stream (seed 0, sources: corpus.SampleTexts)", len(texts))
		t0 := time.Now()
		if err := measure(os.Stdout, "generated", what, ids, texts, cfg); err != nil {
			fail(err)
		}
		fmt.Printf("\n(generated: %v)\n", time.Since(t0).Round(time.Second))
	}
	fmt.Printf("\ntotal %v\n", time.Since(start).Round(time.Second))
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "storagecost:", err)
	os.Exit(1)
}

// row is one line of a storage table: bytes over the measured documents
// and the time to encode and decode them all (zero when not measured).
type row struct {
	name     string
	bytes    int64
	enc, dec time.Duration
}

// measure prints the tables of one corpus.
func measure(w io.Writer, name, what string, ids, texts []string, cfg config) error {
	h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{})
	if err != nil {
		return err
	}
	// Documents with an empty shingle set are dropped: the database
	// refuses them.
	var sets [][]uint64
	var sigs [][]uint32
	var keptIDs, kept []string
	dropped := 0
	for i, t := range texts {
		set, sig := h.Document(nil, nil, t)
		if len(set) == 0 {
			dropped++
			continue
		}
		sets, sigs = append(sets, set), append(sigs, sig)
		keptIDs, kept = append(keptIDs, ids[i]), append(kept, t)
	}
	// Every 10th document trains the dictionaries; the rest are measured.
	var samples [][]byte
	var sampleBytes int
	var ev []int // indexes of the measured documents
	for i, t := range kept {
		if i%10 != 0 {
			ev = append(ev, i)
			continue
		}
		if sampleBytes < cfg.trainMax {
			s := []byte(t[:min(len(t), 32<<10)])
			samples, sampleBytes = append(samples, s), sampleBytes+len(s)
		}
	}
	evTexts := make([][]byte, len(ev))
	var textBytes, shingles int64
	for j, i := range ev {
		evTexts[j] = []byte(kept[i])
		textBytes += int64(len(kept[i]))
		shingles += int64(len(sets[i]))
	}
	n := len(ev)
	if n == 0 {
		fmt.Fprintf(w, "\n## %s\n\nno documents to measure\n", name)
		return nil
	}
	fmt.Fprintf(w, "\n## %s\n\n%s", name, what)
	if dropped > 0 {
		fmt.Fprintf(w, "; %d with no shingles dropped", dropped)
	}
	fmt.Fprintf(w, ". Measured on the %d not used to train the dictionaries (every 10th trains): mean %.0f text bytes, %.0f shingles (64-bit) per document.\n\n",
		n, float64(textBytes)/float64(n), float64(shingles)/float64(n))

	var rows []row
	add := func(r row) { rows = append(rows, r) }
	var notes []string

	// Format v1.
	var v1Set, v1Rec, v1RecText int64
	recs := make([][]byte, n)
	var tEnc time.Duration
	for j, i := range ev {
		v1Set += int64(binary.PutUvarint(make([]byte, binary.MaxVarintLen64), uint64(len(sets[i]))) + 8*len(sets[i]))
		t0 := time.Now()
		recs[j] = codec.AppendDocRecordV1(nil, keptIDs[i], sigs[i], sets[i], nil, nil)
		tEnc += time.Since(t0)
		v1Rec += int64(len(recs[j]))
		v1RecText += int64(len(codec.AppendDocRecordV1(nil, keptIDs[i], sigs[i], sets[i], &kept[i], nil)))
	}
	var set64 []uint64
	tV1Set, err := bestOf(func() error {
		for _, rec := range recs {
			if set64, err = decodeV1Set(rec, set64[:0]); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	add(row{name: "v1 set: uvarint n + 8 B per shingle", bytes: v1Set})
	add(row{name: "v1 doc record, no text (codec.AppendDocRecord; id, signature, set)", bytes: v1Rec, enc: tEnc, dec: tV1Set})
	add(row{name: "v1 doc record with text", bytes: v1RecText})
	var sigBytes int64
	for _, i := range ev {
		sigBytes += 4 * int64(len(sigs[i]))
	}
	add(row{name: fmt.Sprintf("signature alone (%d × uint32)", len(sigs[0])), bytes: sigBytes})

	// Text per record.
	add(row{name: "text, raw", bytes: textBytes})
	zopts := []zstd.EOption{zstd.WithEncoderConcurrency(1), zstd.WithEncoderCRC(false)}
	plainDec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return err
	}
	defer plainDec.Close()
	var fastest [][]byte // the zstd SpeedFastest records, for the verification timings
	var fastHeader int64
	for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
		enc, err := zstd.NewWriter(nil, append(zopts, zstd.WithEncoderLevel(lvl))...)
		if err != nil {
			return err
		}
		r, out, err := perRecord(fmt.Sprintf("text, zstd %v per record", lvl), evTexts, zenc(enc), zdec(plainDec))
		if err != nil {
			return err
		}
		add(r)
		if lvl == zstd.SpeedFastest {
			fastest = out
			for _, f := range out {
				var zh zstd.Header
				if err := zh.Decode(f); err != nil {
					return err
				}
				fastHeader += int64(zh.HeaderSize)
			}
		}
	}
	notes = append(notes, fmt.Sprintf("Per-record zstd frames have no checksum (WithEncoderCRC(false)); their frame headers (4-byte magic included) average %.1f bytes (SpeedFastest, no dictionary), which a format could partly strip.", float64(fastHeader)/float64(n)))

	var zdictVerify func(dst, src []byte) ([]byte, error)
	var zdictRecords [][]byte
	trained, err := dict.BuildZstdDict(samples, dict.Options{MaxDictSize: cfg.dictSize, HashBytes: 6, ZstdDictID: 1, ZstdLevel: zstd.SpeedDefault})
	if err != nil {
		notes = append(notes, fmt.Sprintf("dict.BuildZstdDict failed (%v): no trained-dictionary rows.", err))
	} else {
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderDicts(trained))
		if err != nil {
			return err
		}
		defer dec.Close()
		for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
			enc, err := zstd.NewWriter(nil, append(zopts, zstd.WithEncoderLevel(lvl), zstd.WithEncoderDict(trained))...)
			if err != nil {
				return err
			}
			r, out, err := perRecord(fmt.Sprintf("text, zstd %v per record, trained dictionary", lvl), evTexts, zenc(enc), zdec(dec))
			if err != nil {
				return err
			}
			add(r)
			if lvl == zstd.SpeedDefault {
				zdictVerify, zdictRecords = dec.DecodeAll, out
			}
		}
		notes = append(notes, fmt.Sprintf("Trained dictionary: dict.BuildZstdDict (HashBytes 6, level SpeedDefault, id 1) on %d sample texts (%d bytes, each cut at 32 KiB), %d bytes: %.4f bytes per measured text byte if stored once.",
			len(samples), sampleBytes, len(trained), float64(len(trained))/float64(textBytes)))
	}
	raw := bytes.Join(samples, nil)
	raw = raw[:min(len(raw), cfg.dictSize)]
	{
		dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderDictRaw(0, raw))
		if err != nil {
			return err
		}
		defer dec.Close()
		for _, lvl := range []zstd.EncoderLevel{zstd.SpeedFastest, zstd.SpeedDefault} {
			enc, err := zstd.NewWriter(nil, append(zopts, zstd.WithEncoderLevel(lvl), zstd.WithEncoderDictRaw(0, raw))...)
			if err != nil {
				return err
			}
			r, _, err := perRecord(fmt.Sprintf("text, zstd %v per record, raw dictionary", lvl), evTexts, zenc(enc), zdec(dec))
			if err != nil {
				return err
			}
			add(r)
		}
		notes = append(notes, fmt.Sprintf("Raw dictionary: the first %d bytes of the concatenated sample texts, used as history (zstd id 0: no id in the frame header; s2.MakeDict for s2).", len(raw)))
	}
	r, _, err := perRecord("text, s2 per record", evTexts, s2.Encode, s2.Decode)
	if err != nil {
		return err
	}
	add(r)
	if sd := s2.MakeDict(raw[:min(len(raw), s2.MaxDictSize)], nil); sd != nil {
		r, _, err := perRecord("text, s2 per record, raw dictionary", evTexts, sd.Encode, sd.Decode)
		if err != nil {
			return err
		}
		add(r)
	}

	// Text in blocks.
	var blockNotes []string
	for _, b := range []struct {
		size int
		lvl  zstd.EncoderLevel
	}{{32 << 10, zstd.SpeedFastest}, {32 << 10, zstd.SpeedDefault}, {4 << 10, zstd.SpeedDefault}} {
		enc, err := zstd.NewWriter(nil, append(zopts, zstd.WithEncoderLevel(b.lvl))...)
		if err != nil {
			return err
		}
		r, nb, err := blocks(fmt.Sprintf("text, zstd %v, %d KiB blocks", b.lvl, b.size>>10), evTexts, b.size, zenc(enc), zdec(plainDec))
		if err != nil {
			return err
		}
		add(r)
		blockNotes = append(blockNotes, fmt.Sprintf("%.0f µs (zstd %v, %d KiB)", us(r.dec, nb), b.lvl, b.size>>10))
	}
	r, nb, err := blocks("text, snappy (s2.EncodeSnappy), 4 KiB blocks", evTexts, 4<<10, s2.EncodeSnappy, s2.Decode)
	if err != nil {
		return err
	}
	add(r)
	blockNotes = append(blockNotes, fmt.Sprintf("%.0f µs (snappy, 4 KiB)", us(r.dec, nb)))
	notes = append(notes, "Blocks: consecutive measured records, each a uvarint length and the text, closed at the first record that takes a block to the size; Pebble's keys and per-entry overhead are not counted. Decompressing one block (the cost of reading one candidate whose block is not cached): "+strings.Join(blockNotes, ", ")+".")

	// Sets mode: 32-bit hashes.
	sets32 := make([][]uint32, n)
	var lost int64
	lostDocs := 0
	var bound float64
	for j, i := range ev {
		sets32[j] = to32(sets[i])
		if d := len(sets[i]) - len(sets32[j]); d > 0 {
			lost += int64(d)
			lostDocs++
		}
		bound += log2Binomial(1<<32, len(sets32[j])) / 8
	}
	var raw32 int64
	for _, s := range sets32 {
		raw32 += int64(uvarintLen(uint64(len(s))) + 4*len(s))
	}
	add(row{name: "sets: 32-bit hashes, raw (uvarint n + 4 B each)", bytes: raw32})
	for _, c := range []struct {
		name string
		enc  func([]byte, []uint32) []byte
		dec  func([]uint32, []byte) ([]uint32, error)
	}{
		{"sets: 32-bit, delta uvarint", appendDeltaUvarint, decodeDeltaUvarint},
		{"sets: 32-bit, delta group varint (tag byte per 4)", appendGroupVarint, decodeGroupVarint},
		{"sets: 32-bit, delta Golomb-Rice (bit-packed; codec.AppendRiceSet, format 2's sets mode)", codec.AppendRiceSet, codec.DecodeRiceSet},
	} {
		r, err := setCoding(c.name, sets32, c.enc, c.dec)
		if err != nil {
			return err
		}
		add(r)
	}
	add(row{name: "sets: 32-bit, bound log2 C(2^32, n) (computed, not a coding)", bytes: int64(math.Ceil(bound))})
	notes = append(notes, fmt.Sprintf("32-bit hashes are the top 32 bits of each 64-bit hash (still in order), de-duplicated: %d of %d shingles lost to collisions within a set, in %d documents.", lost, shingles, lostDocs))

	fmt.Fprintln(w, "| payload | bytes/doc | bytes per text byte | encode µs/doc | decode µs/doc |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|")
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %.1f | %.3f | %s | %s |\n", r.name, float64(r.bytes)/float64(n), float64(r.bytes)/float64(textBytes), usCell(r.enc, n), usCell(r.dec, n))
	}
	fmt.Fprintln(w)
	for _, s := range notes {
		fmt.Fprintln(w, "- "+s)
	}

	// Verifying a candidate, timed on the first verifyDocs measured
	// documents.
	nv := min(n, verifyDocs)
	fmt.Fprintf(w, "\nVerifying a candidate (µs per document, over the first %d measured):\n\n", nv)
	fmt.Fprintln(w, "| step | µs/doc |")
	fmt.Fprintln(w, "|---|---:|")
	timeIt := func(step string, f func(j int) error) error {
		d, err := bestOf(func() error {
			for j := range nv {
				if err := f(j); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "| %s | %.2f |\n", step, us(d, nv))
		return nil
	}
	var buf []byte
	var set []uint64
	var sig []uint32
	sh := h.Shingler()
	steps := []struct {
		name string
		f    func(j int) error
	}{
		{"v1: decode the stored set (codec.DocView.AppendSet)", func(j int) error {
			set, err = decodeV1Set(recs[j], set[:0])
			return err
		}},
		{"h.Document on the raw text (set + signature)", func(j int) error {
			set, sig = h.Document(set[:0], sig[:0], kept[ev[j]])
			return nil
		}},
		{"Shingler.AppendSet on the raw text (set only)", func(j int) error {
			set = sh.AppendSet(set[:0], kept[ev[j]])
			return nil
		}},
		{"zstd SpeedFastest record: decompress", func(j int) error {
			buf, err = plainDec.DecodeAll(fastest[j], buf[:0])
			return err
		}},
		{"zstd SpeedFastest record: decompress + h.Document", func(j int) error {
			if buf, err = plainDec.DecodeAll(fastest[j], buf[:0]); err != nil {
				return err
			}
			set, sig = h.Document(set[:0], sig[:0], string(buf))
			return nil
		}},
		{"zstd SpeedFastest record: decompress + Shingler.AppendSet", func(j int) error {
			if buf, err = plainDec.DecodeAll(fastest[j], buf[:0]); err != nil {
				return err
			}
			set = sh.AppendSet(set[:0], string(buf))
			return nil
		}},
	}
	if zdictVerify != nil {
		steps = append(steps, struct {
			name string
			f    func(j int) error
		}{"zstd SpeedDefault + trained dictionary record: decompress + h.Document", func(j int) error {
			if buf, err = zdictVerify(zdictRecords[j], buf[:0]); err != nil {
				return err
			}
			set, sig = h.Document(set[:0], sig[:0], string(buf))
			return nil
		}})
	}
	for _, s := range steps {
		if err := timeIt(s.name, s.f); err != nil {
			return err
		}
	}

	// 32-bit hashing and exact Jaccard.
	p := min(len(sets), cfg.pairsDocs)
	t0 := time.Now()
	pairs := allpairs.Join(sets[:p], 0.5)
	joinTime := time.Since(t0)
	fmt.Fprintf(w, "\n32-bit hashing and exact Jaccard, over the %d pairs at J ≥ 0.5 (64-bit sets) among the first %d documents (allpairs.Join, %v):", len(pairs), p, joinTime.Round(time.Millisecond))
	if len(pairs) == 0 {
		fmt.Fprintln(w, " none.")
		return nil
	}
	var maxD, sumD float64
	changed := 0
	crossed := map[float64]int{}
	thresholds := []float64{0.5, 0.8, 0.9}
	for _, pr := range pairs {
		j32 := jaccard32(to32(sets[pr.A]), to32(sets[pr.B]))
		d := math.Abs(j32 - pr.Jaccard)
		maxD, sumD = max(maxD, d), sumD+d
		if d != 0 {
			changed++
		}
		for _, t := range thresholds {
			if (j32 >= t) != (pr.Jaccard >= t) {
				crossed[t]++
			}
		}
	}
	fmt.Fprintf(w, " |J32 − J64| max %.3g, mean %.3g; pairs whose Jaccard differs at all: %d; pairs changing side of t = 0.5, 0.8, 0.9: %d, %d, %d.\n",
		maxD, sumD/float64(len(pairs)), changed, crossed[0.5], crossed[0.8], crossed[0.9])
	return nil
}

// perRecord compresses each text alone, then decompresses each and checks
// it, and returns the row and the compressed records.
func perRecord(name string, texts [][]byte, compress func(dst, src []byte) []byte, decompress func(dst, src []byte) ([]byte, error)) (row, [][]byte, error) {
	out := make([][]byte, len(texts))
	r := row{name: name}
	t0 := time.Now()
	for i, t := range texts {
		out[i] = compress(nil, t)
	}
	r.enc = time.Since(t0)
	var buf []byte
	var err error
	r.dec, err = bestOf(func() error {
		for _, c := range out {
			if buf, err = decompress(buf[:0], c); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return r, nil, err
	}
	for i, c := range out {
		r.bytes += int64(len(c))
		if buf, err = decompress(buf[:0], c); err != nil || !bytes.Equal(buf, texts[i]) {
			return r, nil, fmt.Errorf("%s: record %d does not round-trip (%v)", name, i, err)
		}
	}
	return r, out, nil
}

// blocks packs consecutive texts (uvarint length + text) into blocks of
// about size bytes, compresses each, and returns the row (decode time is
// for all blocks) and the number of blocks.
func blocks(name string, texts [][]byte, size int, compress func(dst, src []byte) []byte, decompress func(dst, src []byte) ([]byte, error)) (row, int, error) {
	var plain [][]byte
	var cur []byte
	for _, t := range texts {
		cur = binary.AppendUvarint(cur, uint64(len(t)))
		cur = append(cur, t...)
		if len(cur) >= size {
			plain, cur = append(plain, cur), nil
		}
	}
	if len(cur) > 0 {
		plain = append(plain, cur)
	}
	r := row{name: name}
	out := make([][]byte, len(plain))
	t0 := time.Now()
	for i, b := range plain {
		out[i] = compress(nil, b)
	}
	r.enc = time.Since(t0)
	var buf []byte
	var err error
	r.dec, err = bestOf(func() error {
		for _, c := range out {
			if buf, err = decompress(buf[:0], c); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return r, 0, err
	}
	for i, c := range out {
		r.bytes += int64(len(c))
		if buf, err = decompress(buf[:0], c); err != nil || !bytes.Equal(buf, plain[i]) {
			return r, 0, fmt.Errorf("%s: block %d does not round-trip (%v)", name, i, err)
		}
	}
	return r, len(out), nil
}

// setCoding encodes and decodes every set with one coding, checking the
// round trip.
func setCoding(name string, sets [][]uint32, enc func([]byte, []uint32) []byte, dec func([]uint32, []byte) ([]uint32, error)) (row, error) {
	r := row{name: name}
	out := make([][]byte, len(sets))
	t0 := time.Now()
	for i, s := range sets {
		out[i] = enc(nil, s)
	}
	r.enc = time.Since(t0)
	var got []uint32
	var err error
	r.dec, err = bestOf(func() error {
		for _, b := range out {
			if got, err = dec(got[:0], b); err != nil {
				return fmt.Errorf("%s: %w", name, err)
			}
		}
		return nil
	})
	if err != nil {
		return r, err
	}
	for i, b := range out {
		r.bytes += int64(len(b))
		if got, err = dec(got[:0], b); err != nil || !slices.Equal(got, sets[i]) {
			return r, fmt.Errorf("%s: set %d does not round-trip (%v)", name, i, err)
		}
	}
	return r, nil
}

// zenc and zdec give zstd's EncodeAll and DecodeAll the argument order
// of s2's Encode and Decode: dst, src.
func zenc(e *zstd.Encoder) func(dst, src []byte) []byte {
	return func(dst, src []byte) []byte { return e.EncodeAll(src, dst) }
}

func zdec(d *zstd.Decoder) func(dst, src []byte) ([]byte, error) {
	return func(dst, src []byte) ([]byte, error) { return d.DecodeAll(src, dst) }
}

// verifyDocs is how many documents the verification timings run on.
const verifyDocs = 5000

// decodeRuns is how many times each decode or verification pass runs; the
// fastest run counts, to damp the noise of a shared machine.
const decodeRuns = 3

// bestOf runs f decodeRuns times and returns the shortest run, or f's
// first error.
func bestOf(f func() error) (time.Duration, error) {
	best := time.Duration(math.MaxInt64)
	for range decodeRuns {
		t0 := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		best = min(best, time.Since(t0))
	}
	return best, nil
}

func us(d time.Duration, n int) float64 { return float64(d.Nanoseconds()) / 1e3 / float64(n) }

func usCell(d time.Duration, n int) string {
	if d == 0 {
		return "—"
	}
	return fmt.Sprintf("%.2f", us(d, n))
}

func uvarintLen(x uint64) int { return (bits.Len64(x|1) + 6) / 7 }

// log2Binomial returns log2 C(u, k): the fewest bits that can tell apart
// every set of k values below u.
func log2Binomial(u float64, k int) float64 {
	a, _ := math.Lgamma(u + 1)
	b, _ := math.Lgamma(float64(k) + 1)
	c, _ := math.Lgamma(u - float64(k) + 1)
	return (a - b - c) / math.Ln2
}

// to32 returns the top 32 bits of each hash of a sorted 64-bit set: sorted
// already, de-duplicated here.
func to32(set []uint64) []uint32 {
	out := make([]uint32, 0, len(set))
	for _, x := range set {
		v := uint32(x >> 32)
		if len(out) == 0 || out[len(out)-1] != v {
			out = append(out, v)
		}
	}
	return out
}

// jaccard32 is minhash.Jaccard for sorted, de-duplicated 32-bit sets.
func jaccard32(a, b []uint32) float64 {
	if len(a) == 0 && len(b) == 0 {
		return 1
	}
	inter := 0
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

var errCorrupt = errors.New("corrupt set encoding")

// appendDeltaUvarint appends a sorted set as uvarint n, then each value's
// gap from its predecessor (the first from 0) as a uvarint.
func appendDeltaUvarint(dst []byte, set []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	prev := uint32(0)
	for _, v := range set {
		dst = binary.AppendUvarint(dst, uint64(v-prev))
		prev = v
	}
	return dst
}

func decodeDeltaUvarint(dst []uint32, b []byte) ([]uint32, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return dst, errCorrupt
	}
	b = b[k:]
	prev := uint64(0)
	for range n {
		g, k := binary.Uvarint(b)
		if k <= 0 || prev+g > math.MaxUint32 {
			return dst, errCorrupt
		}
		b, prev = b[k:], prev+g
		dst = append(dst, uint32(prev))
	}
	if len(b) != 0 {
		return dst, errCorrupt
	}
	return dst, nil
}

// appendGroupVarint appends a sorted set as uvarint n, then its gaps (as
// in appendDeltaUvarint) in groups of four: a tag byte holding each gap's
// byte length less one in two bits, then the gaps' low bytes, little
// endian.
func appendGroupVarint(dst []byte, set []uint32) []byte {
	dst = binary.AppendUvarint(dst, uint64(len(set)))
	prev := uint32(0)
	for i := 0; i < len(set); i += 4 {
		at := len(dst)
		dst = append(dst, 0)
		for j := 0; j < 4 && i+j < len(set); j++ {
			g := set[i+j] - prev
			prev = set[i+j]
			nb := max(1, (bits.Len32(g)+7)/8)
			dst[at] |= byte(nb-1) << (2 * j)
			for k := range nb {
				dst = append(dst, byte(g>>(8*k)))
			}
		}
	}
	return dst
}

func decodeGroupVarint(dst []uint32, b []byte) ([]uint32, error) {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return dst, errCorrupt
	}
	b = b[k:]
	prev := uint64(0)
	for i := uint64(0); i < n; i += 4 {
		if len(b) == 0 {
			return dst, errCorrupt
		}
		tag := b[0]
		b = b[1:]
		for j := uint64(0); j < 4 && i+j < n; j++ {
			nb := int(tag>>(2*j)&3) + 1
			if len(b) < nb {
				return dst, errCorrupt
			}
			var g uint64
			for k := range nb {
				g |= uint64(b[k]) << (8 * k)
			}
			b, prev = b[nb:], prev+g
			if prev > math.MaxUint32 {
				return dst, errCorrupt
			}
			dst = append(dst, uint32(prev))
		}
	}
	if len(b) != 0 {
		return dst, errCorrupt
	}
	return dst, nil
}

// decodeV1Set decodes the 64-bit set of a format 1 doc record.
func decodeV1Set(rec []byte, dst []uint64) ([]uint64, error) {
	d, err := codec.ParseDocView(rec)
	if err != nil {
		return dst, err
	}
	return d.AppendSet(dst)
}
