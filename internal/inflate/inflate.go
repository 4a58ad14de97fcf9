// Package inflate inflates whole raw deflate streams (RFC 1951) whose
// inflated size is known in advance: a BGZF member's, whose trailer says
// it. It is the hot part of reading gzip input, and a stream known whole
// needs no streaming decoder: with cgo it is libdeflate's decompressor
// (Eric Biggers, MIT licence, the C sources in libdeflate/); without cgo
// it is klauspost/compress/flate. docio's BenchmarkGzip measures BGZF
// reading with it (the README gives its figures).
package inflate

import "errors"

// The ways a stream can fail to be what its caller says it is. Each
// error Inflate returns is one of them (errors.Is).
var (
	// ErrCorrupt: the data is not a valid deflate stream.
	ErrCorrupt = errors.New("inflate: corrupt deflate data")
	// ErrTooShort: the stream ends inflated to fewer bytes than dst
	// holds.
	ErrTooShort = errors.New("inflate: the deflate stream inflates to less than its stated size")
	// ErrTooLong: the stream inflates to more bytes than dst holds.
	ErrTooLong = errors.New("inflate: the deflate stream inflates to more than its stated size")
	// ErrTrailing: the stream ends before the end of src.
	ErrTrailing = errors.New("inflate: bytes after the end of the deflate stream")
)
