package docio

// NewGzipReader is newGzipReader, for the benchmarks of package
// docio_test (which reads the shared corpora through internal/corpus,
// an importer of docio).
var NewGzipReader = newGzipReader
