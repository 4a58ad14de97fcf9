// Package gen generates corpora for scale tests whose near-duplicates are
// known by construction: originals made of real text, and near-copies of
// earlier originals at controlled word-edit rates. The same options and
// seed give the same corpus on every machine.
package gen

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"strings"
)

// Options configure a corpus. The zero value of a field means its default.
type Options struct {
	// Seed selects the corpus. Default: 0.
	Seed uint64
	// N is the number of documents.
	N int
	// Sources are real texts that originals are made of (required).
	Sources []string
	// PartsPerDoc is how many source texts' worth of words an original
	// has. Default: 3 (about 1–1.5 KB from package descriptions).
	PartsPerDoc int
	// SpanWords is the most consecutive words an original takes from one
	// source text. Default: 16.
	//
	// NB: originals are made of short spans from many sources, not of
	// whole source texts: with whole texts, a million originals drawn
	// from 64,000 descriptions share texts so often that thousands of
	// originals become near-duplicates of each other by accident (a long
	// description shared by two originals dominates both), and the ground
	// truth is no longer known by construction.
	SpanWords int
	// CopyFraction is the fraction of documents that are near-copies of an
	// earlier original. Default: 0.2.
	CopyFraction float64
	// EditRates are the word-edit rates of near-copies, drawn uniformly.
	// Default: 0, 0.01, 0.03, 0.1.
	EditRates []float64
	// Window is how many recent originals a copy may copy from (bounds
	// memory). Default: 1000.
	Window int
}

// Doc is one generated document. Of is the id of the original it copies
// ("" for an original) and EditRate the rate of its edits.
type Doc struct {
	ID       string
	Text     string
	Of       string
	EditRate float64
}

// Stream yields the corpus one document at a time.
func Stream(o Options) iter.Seq[Doc] {
	if o.PartsPerDoc == 0 {
		o.PartsPerDoc = 3
	}
	if o.CopyFraction == 0 {
		o.CopyFraction = 0.2
	}
	if o.EditRates == nil {
		o.EditRates = []float64{0, 0.01, 0.03, 0.1}
	}
	if o.Window == 0 {
		o.Window = 1000
	}
	if o.SpanWords == 0 {
		o.SpanWords = 16
	}
	return func(yield func(Doc) bool) {
		if len(o.Sources) == 0 {
			return
		}
		rng := rand.New(rand.NewPCG(o.Seed, 0x6c736864622d67))
		// NB: each source split into words once, not once per span
		// taken from it (which was most of gen's time).
		words := make([][]string, len(o.Sources))
		for i, s := range o.Sources {
			words[i] = strings.Fields(s)
		}
		type orig struct{ id, text string }
		window := make([]orig, 0, o.Window)
		for i := range o.N {
			id := fmt.Sprintf("g%08d", i)
			if len(window) > 0 && rng.Float64() < o.CopyFraction {
				src := window[rng.IntN(len(window))]
				rate := o.EditRates[rng.IntN(len(o.EditRates))]
				if !yield(Doc{ID: id, Text: edit(rng, src.text, rate), Of: src.id, EditRate: rate}) {
					return
				}
				continue
			}
			text := original(rng, o.PartsPerDoc, o.SpanWords, words)
			if len(window) < o.Window {
				window = append(window, orig{id, text})
			} else {
				window[rng.IntN(o.Window)] = orig{id, text}
			}
			if !yield(Doc{ID: id, Text: text}) {
				return
			}
		}
	}
}

// original makes an original text: as many words as parts random
// sources have, taken in spans of 1 to spanWords consecutive words from
// random sources and places. sources are the sources' words.
func original(rng *rand.Rand, parts, spanWords int, sources [][]string) string {
	target := 0
	for range parts {
		target += len(sources[rng.IntN(len(sources))])
	}
	out := make([]string, 0, target)
	// NB: the attempts bound the loop when the sources hold no words.
	for attempts := 0; len(out) < target && attempts < 100*target; attempts++ {
		words := sources[rng.IntN(len(sources))]
		if len(words) == 0 {
			continue
		}
		n := min(1+rng.IntN(spanWords), len(words), target-len(out))
		start := rng.IntN(len(words) - n + 1)
		out = append(out, words[start:start+n]...)
	}
	return strings.Join(out, " ")
}

// edit changes each word of text with probability rate: replaced by
// another word of the text, deleted, or followed by an inserted one.
func edit(rng *rand.Rand, text string, rate float64) string {
	if rate == 0 {
		return text
	}
	words := strings.Fields(text)
	out := make([]string, 0, len(words)+8)
	for _, w := range words {
		if rng.Float64() >= rate {
			out = append(out, w)
			continue
		}
		switch rng.IntN(3) {
		case 0:
			out = append(out, words[rng.IntN(len(words))])
		case 1: // deleted
		default:
			out = append(out, w, words[rng.IntN(len(words))])
		}
	}
	return strings.Join(out, " ")
}
