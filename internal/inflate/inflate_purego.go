//go:build !cgo || lshdbpurego

package inflate

import (
	"bytes"
	"io"

	"github.com/klauspost/compress/flate"
)

// Name names the decompressor this build has (lshdb version says it):
// without cgo, BGZF members inflate about 3x slower than with it.
const Name = "klauspost/compress/flate (built without cgo)"

// Decompressor inflates whole streams, one at a time; it is not safe for
// concurrent use (each goroutine has its own).
type Decompressor struct {
	src bytes.Reader
	fr  io.ReadCloser
}

// New returns a Decompressor.
func New() (*Decompressor, error) { return &Decompressor{}, nil }

// Inflate inflates src, one whole raw deflate stream that ends where src
// ends, into dst, which must be exactly as long as what it inflates to.
// On an error dst holds no meaningful bytes.
func (z *Decompressor) Inflate(dst, src []byte) error {
	if len(src) == 0 {
		return ErrCorrupt
	}
	z.src.Reset(src)
	if z.fr == nil {
		z.fr = flate.NewReader(&z.src)
	} else if err := z.fr.(flate.Resetter).Reset(&z.src, nil); err != nil {
		return ErrCorrupt
	}
	_, err := io.ReadFull(z.fr, dst)
	switch {
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		// NB: the stream ended early, or its data ran out: a stream
		// cut short, corrupt as libdeflate calls it.
		if z.ended() {
			return ErrTooShort
		}
		return ErrCorrupt
	case err != nil:
		return ErrCorrupt
	}
	var one [1]byte
	k, err := z.fr.Read(one[:])
	switch {
	case k != 0:
		return ErrTooLong
	case err != io.EOF:
		return ErrCorrupt
	}
	if z.src.Len() != 0 {
		return ErrTrailing
	}
	return nil
}

// ended reports whether the stream read reached its final block's end:
// after an error, flate's reader gives the same error again, io.EOF for a
// stream that ended.
func (z *Decompressor) ended() bool {
	var one [1]byte
	k, err := z.fr.Read(one[:])
	return k == 0 && err == io.EOF
}

// Close releases the decompressor; it must not be used after.
func (z *Decompressor) Close() {}
