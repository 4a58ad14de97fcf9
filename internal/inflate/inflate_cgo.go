//go:build cgo && !lshdbpurego

package inflate

// NB: the C sources are compiled here, in this file's preamble, rather
// than as .c files of the package: a package with .c files does not
// build without cgo, and this one must (inflate_purego.go). Only
// libdeflate's decompressor is here: deflate_decompress.c and what it
// needs (utils.c for its allocator, x86's cpu_features.c for the runtime
// choice of the BMI2 variant on x86-64; elsewhere the generic C loop).

/*
#cgo CFLAGS: -O2 -I${SRCDIR}/libdeflate
#include "libdeflate/lib/utils.c"
#include "libdeflate/lib/deflate_decompress.c"
#include "libdeflate/lib/x86/cpu_features.c"

// inflate_whole inflates in into exactly out_len bytes of out; it returns
// libdeflate's result, and in *consumed the input it read.
static int inflate_whole(struct libdeflate_decompressor *d,
		const void *in, size_t in_len, void *out, size_t out_len,
		size_t *consumed, size_t *produced) {
	return (int)libdeflate_deflate_decompress_ex(d, in, in_len, out, out_len,
		consumed, produced);
}
*/
import "C"

import (
	"errors"
	"unsafe"
)

// Name names the decompressor this build has (lshdb version says it).
const Name = "libdeflate 1.25+ (v1.25-9-g28e88e9)"

// Decompressor inflates whole streams, one at a time; it is not safe for
// concurrent use (each goroutine has its own). Close frees its C memory.
type Decompressor struct {
	d *C.struct_libdeflate_decompressor
	// scratch is the output buffer given for an empty dst: libdeflate
	// must not get NULL (a stored empty block memcpys 0 bytes to it,
	// undefined behaviour that UBSan reports).
	scratch [1]byte
}

// New returns a Decompressor.
func New() (*Decompressor, error) {
	d := C.libdeflate_alloc_decompressor()
	if d == nil {
		return nil, errors.New("inflate: cannot allocate a decompressor")
	}
	return &Decompressor{d: d}, nil
}

// Inflate inflates src, one whole raw deflate stream that ends where src
// ends, into dst, which must be exactly as long as what it inflates to.
// On an error dst holds no meaningful bytes.
func (z *Decompressor) Inflate(dst, src []byte) error {
	if len(src) == 0 {
		return ErrCorrupt
	}
	var consumed, produced C.size_t
	out := unsafe.Pointer(&z.scratch[0])
	if len(dst) > 0 {
		out = unsafe.Pointer(unsafe.SliceData(dst))
	}
	// NB: neither slice holds Go pointers, and C keeps neither past the
	// call (cgo's pointer-passing rules).
	r := C.inflate_whole(z.d, unsafe.Pointer(unsafe.SliceData(src)), C.size_t(len(src)),
		out, C.size_t(len(dst)), &consumed, &produced)
	switch r {
	case C.LIBDEFLATE_SUCCESS:
	case C.LIBDEFLATE_INSUFFICIENT_SPACE:
		return ErrTooLong
	default:
		return ErrCorrupt
	}
	if int(produced) < len(dst) {
		return ErrTooShort
	}
	if int(consumed) != len(src) {
		return ErrTrailing
	}
	return nil
}

// Close frees the decompressor; it must not be used after.
func (z *Decompressor) Close() {
	if z.d != nil {
		C.libdeflate_free_decompressor(z.d)
		z.d = nil
	}
}
