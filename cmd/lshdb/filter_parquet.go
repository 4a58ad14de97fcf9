package main

import (
	"errors"
	"io"

	"github.com/lshdb/lshdb/internal/docio"
)

// parquetSink writes filter's Parquet output. TODO(lead): the writer is
// being built in internal/docio (parquetout.go).
type parquetSink struct{}

func newParquetSink(w io.Writer, src docio.Source, cols []outCol) (*parquetSink, error) {
	return nil, errors.New("parquet output: not yet")
}

func (p *parquetSink) sameSchema(src docio.Source) bool   { return false }
func (p *parquetSink) write(rec record, vals []any) error { return nil }
func (p *parquetSink) close() error                       { return nil }
