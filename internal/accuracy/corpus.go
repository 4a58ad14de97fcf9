package accuracy

import (
	"runtime"
	"sync"

	"github.com/lshdb/lshdb/bands"
	"github.com/lshdb/lshdb/internal/allpairs"
	"github.com/lshdb/lshdb/minhash"
)

// Config is one way of turning sets into band keys: a signature scheme,
// its size and seed, and a banding.
type Config struct {
	Scheme minhash.Scheme
	K      int
	Seed   uint64
	P      bands.Params
}

// CorpusRecall returns how many of the truth pairs (indexes into sets)
// become candidates, that is share at least one band key, when every set
// is sketched under c: the recall of lshdb's all-pairs join before
// verification, without building an index. Precision needs no measuring:
// every candidate is verified exactly.
func CorpusRecall(sets [][]uint64, truth []allpairs.Pair, c Config) (found int, err error) {
	keys, err := corpusKeys(sets, c)
	if err != nil {
		return 0, err
	}
	b := c.P.B
	for _, p := range truth {
		ka, kb := keys[p.A*b:(p.A+1)*b], keys[p.B*b:(p.B+1)*b]
		for i := range ka {
			if ka[i] == kb[i] {
				found++
				break
			}
		}
	}
	return found, nil
}

// corpusKeys returns every set's b band keys, set after set.
func corpusKeys(sets [][]uint64, c Config) ([]uint64, error) {
	b := c.P.B
	keys := make([]uint64, len(sets)*b)
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sk, err := minhash.NewSketcher(minhash.SketchOptions{Scheme: c.Scheme, NumPerm: c.K, Seed: c.Seed})
			if err != nil {
				errs[w] = err
				return
			}
			var sig []uint32
			var ks []uint64
			for i := w; i < len(sets); i += workers {
				sig = sk.Sketch(sig[:0], sets[i])
				if ks, err = bands.AppendKeys(ks[:0], sig, c.P); err != nil {
					errs[w] = err
					return
				}
				copy(keys[i*b:(i+1)*b], ks)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// ExpectedRecall is the mean over the truth pairs of the curve's
// probability at each pair's Jaccard: the recall the banding promises on
// these pairs if signature values behaved as independent MinHash values.
func ExpectedRecall(truth []allpairs.Pair, p bands.Params) float64 {
	if len(truth) == 0 {
		return 1
	}
	var sum float64
	for _, q := range truth {
		sum += p.Probability(q.Jaccard)
	}
	return sum / float64(len(truth))
}
