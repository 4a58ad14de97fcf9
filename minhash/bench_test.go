package minhash_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lshdb/lshdb/internal/corpus"
	"github.com/lshdb/lshdb/internal/gen"
	"github.com/lshdb/lshdb/minhash"
)

// benchCorpus is a named list of texts that one benchmark op runs over.
type benchCorpus struct {
	name  string
	texts []string
	bytes int64
}

// benchCorpora returns the testdata fixture and, when ../shared is beside
// the repository, a 5,000-document sample of debian-descriptions.
func benchCorpora(b *testing.B) []benchCorpus {
	b.Helper()
	var out []benchCorpus
	add := func(name string, docs []corpus.Doc) {
		c := benchCorpus{name: name}
		for _, d := range docs {
			c.texts = append(c.texts, d.Text)
			c.bytes += int64(len(d.Text))
		}
		out = append(out, c)
	}
	p, err := corpus.Testdata("corpora/debian-sample/docs.jsonl")
	if err != nil {
		b.Fatal(err)
	}
	docs, err := corpus.Load(p, 0)
	if err != nil {
		b.Fatal(err)
	}
	add("testdata", docs)
	// The generated corpus of the bulk benchmarks: long texts (about
	// 1–1.5 KB each) made of spans of the testdata sample.
	sources, err := corpus.SampleTexts()
	if err != nil {
		b.Fatal(err)
	}
	var generated []corpus.Doc
	for g := range gen.Stream(gen.Options{Seed: 5, N: 2000, Sources: sources}) {
		generated = append(generated, corpus.Doc{ID: g.ID, Text: g.Text})
	}
	add("generated", generated)
	docs, err = corpus.Shared("debian-descriptions", 5000)
	switch {
	case errors.Is(err, corpus.ErrNoShared):
		b.Logf("skipping the shared sample: %v", err)
	case err != nil:
		b.Fatal(err)
	default:
		add("debian-descriptions", docs)
	}
	return out
}

// floorPass is the hashing floor: normalize + shingle + one xxhash64 per
// shingle. It returns the number of shingles.
func floorPass(sh *minhash.Shingler, buf []uint64, texts []string) ([]uint64, int) {
	n := 0
	for _, t := range texts {
		buf = sh.AppendHashes(buf[:0], t)
		n += len(buf)
	}
	return buf, n
}

// BenchmarkFloor measures the hashing floor that the signature schemes are
// compared with.
func BenchmarkFloor(b *testing.B) {
	for _, c := range benchCorpora(b) {
		b.Run(c.name, func(b *testing.B) {
			sh, _ := minhash.NewShingler(minhash.Options{})
			var buf []uint64
			var shingles int
			b.SetBytes(c.bytes)
			b.ReportAllocs()
			for b.Loop() {
				buf, shingles = floorPass(sh, buf, c.texts)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(shingles), "ns/shingle")
		})
	}
}

// benchScheme measures text → signature for one scheme, and then the floor
// over the same input for as many passes, so that the ratio it reports
// (x-floor) compares two measurements of the same run.
func benchScheme(b *testing.B, scheme minhash.Scheme) {
	for _, c := range benchCorpora(b) {
		b.Run(c.name, func(b *testing.B) {
			h, err := minhash.NewHasher(minhash.Options{}, minhash.SketchOptions{Scheme: scheme})
			if err != nil {
				b.Fatal(err)
			}
			var sig []uint32
			b.SetBytes(c.bytes)
			b.ReportAllocs()
			for b.Loop() {
				for _, t := range c.texts {
					sig = h.Signature(sig[:0], t)
				}
			}
			elapsed := b.Elapsed()
			b.StopTimer()
			sh, _ := minhash.NewShingler(minhash.Options{})
			var buf []uint64
			var shingles int
			start := time.Now()
			for range b.N {
				buf, shingles = floorPass(sh, buf, c.texts)
			}
			floor := time.Since(start)
			b.ReportMetric(float64(elapsed.Nanoseconds())/float64(b.N)/float64(shingles), "ns/shingle")
			b.ReportMetric(float64(elapsed)/float64(floor), "x-floor")
		})
	}
}

// BenchmarkFSS measures the whole pipeline with fast similarity sketching
// at k = 128, the default. On long texts it does OPH's work (round 0 fills
// every bin); compare it with BenchmarkOPH in the same run.
func BenchmarkFSS(b *testing.B) { benchScheme(b, minhash.SchemeFSS) }

// BenchmarkOPH measures the whole pipeline with one-permutation hashing at
// k = 128. Target: x-floor ≤ 1.5.
func BenchmarkOPH(b *testing.B) { benchScheme(b, minhash.SchemeOPH) }

// BenchmarkClassic measures the whole pipeline with k = 128 multiply-shift
// hash functions. Target: x-floor ≤ 10.
func BenchmarkClassic(b *testing.B) { benchScheme(b, minhash.SchemeClassic) }

// BenchmarkSetOf compares the two ways to get a text's distinct shingles,
// each op over the whole corpus: sorted (AppendSet, what a stored set
// needs) and in no particular order (AppendDistinct, enough to count,
// fingerprint or sketch it). The floor is in BenchmarkFloor.
func BenchmarkSetOf(b *testing.B) {
	for _, c := range benchCorpora(b) {
		sh, _ := minhash.NewShingler(minhash.Options{})
		var buf []uint64
		for _, way := range []struct {
			name string
			fn   func([]uint64, string) []uint64
		}{{"sorted", sh.AppendSet}, {"distinct", sh.AppendDistinct}} {
			b.Run(c.name+"/"+way.name, func(b *testing.B) {
				b.SetBytes(c.bytes)
				for b.Loop() {
					for _, t := range c.texts {
						buf = way.fn(buf[:0], t)
					}
				}
			})
		}
	}
}

// BenchmarkLongText measures a text's distinct shingles (AppendDistinct, a
// database's write) and its sorted set (AppendSet) on one long text, the
// generated sample joined and then repeated to 16 MB, in ASCII and with a
// non-ASCII letter in each word, as ratios to the hashing floor on the same
// text in the same run (x-floor). A text that repeats itself must not cost
// more per shingle than one that does not: before its table grew with the
// distinct shingles it was sized for all 16 million, and de-duplication
// missed the cache on every probe.
func BenchmarkLongText(b *testing.B) {
	sources, err := corpus.SampleTexts()
	if err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	for g := range gen.Stream(gen.Options{Seed: 5, N: 2000, Sources: sources}) {
		sb.WriteString(g.Text)
		sb.WriteByte(' ')
	}
	joined := sb.String()
	ascii := strings.Repeat(joined, (16<<20)/len(joined)+1)[:16<<20]
	for _, c := range []struct{ name, text string }{
		{"ascii", ascii},
		{"non-ascii", strings.ReplaceAll(ascii, "e", "é")},
	} {
		sh, _ := minhash.NewShingler(minhash.Options{})
		var buf []uint64
		for _, way := range []struct {
			name string
			fn   func([]uint64, string) []uint64
		}{{"distinct", sh.AppendDistinct}, {"sorted", sh.AppendSet}} {
			b.Run(c.name+"/"+way.name, func(b *testing.B) {
				b.SetBytes(int64(len(c.text)))
				for b.Loop() {
					buf = way.fn(buf[:0], c.text)
				}
				elapsed := b.Elapsed()
				b.StopTimer()
				start := time.Now()
				for range b.N {
					buf = sh.AppendHashes(buf[:0], c.text)
				}
				b.ReportMetric(float64(elapsed)/float64(time.Since(start)), "x-floor")
			})
		}
	}
}
