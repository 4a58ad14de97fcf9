package minhash

// A Hasher runs the whole pipeline, text to shingle set and signature, with
// one [Shingler] and one [Sketcher] and reused buffers. It is not safe for
// concurrent use: keep one per goroutine. Make one with [NewHasher]: the
// zero value is not usable (its methods panic).
type Hasher struct {
	sh    *Shingler
	sk    *Sketcher
	elems []uint64
}

// NewHasher returns a Hasher for the given options (defaults filled in).
func NewHasher(opts Options, sketch SketchOptions) (*Hasher, error) {
	sh, err := NewShingler(opts)
	if err != nil {
		return nil, err
	}
	sk, err := NewSketcher(sketch)
	if err != nil {
		return nil, err
	}
	return &Hasher{sh: sh, sk: sk}, nil
}

// Shingler returns the Hasher's Shingler.
func (h *Hasher) Shingler() *Shingler { return h.sh }

// Sketcher returns the Hasher's Sketcher.
func (h *Hasher) Sketcher() *Sketcher { return h.sk }

// Signature appends text's signature to dst and returns the extended slice.
func (h *Hasher) Signature(dst []uint32, text string) []uint32 {
	h.elems = h.sh.AppendElements(h.elems[:0], text)
	return h.sk.Sketch(dst, h.elems)
}

// Document appends text's shingle set (sorted, de-duplicated) to set and its
// signature to sig, and returns both extended slices. An empty text gives an
// empty set and the empty signature.
func (h *Hasher) Document(set []uint64, sig []uint32, text string) ([]uint64, []uint32) {
	start := len(set)
	set = h.sh.AppendSet(set, text)
	return set, h.sk.Sketch(sig, set[start:])
}

// DocumentUnsorted is Document with the set de-duplicated but in no
// particular order (see Shingler.AppendDistinct): for callers that need the
// set's size or an order-independent fingerprint, not its order. The
// signature is the same: a signature does not depend on the order of the
// elements.
func (h *Hasher) DocumentUnsorted(set []uint64, sig []uint32, text string) ([]uint64, []uint32) {
	start := len(set)
	set = h.sh.AppendDistinct(set, text)
	return set, h.sk.Sketch(sig, set[start:])
}
