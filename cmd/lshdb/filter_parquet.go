package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/lshdb/lshdb/internal/docio"
)

// parquetSink writes filter's Parquet output: the input's rows, with the
// input's schema (and filter's columns added last).
type parquetSink struct {
	pw *docio.ParquetWriter
}

func newParquetSink(w io.Writer, src docio.Source, cols []docio.Column) (*parquetSink, error) {
	pw, err := docio.NewParquetWriter(w, src, cols)
	if errors.Is(err, docio.ErrColumnExists) {
		return nil, fmt.Errorf("%w: %w", errFieldExists, err)
	}
	if err != nil {
		return nil, err
	}
	return &parquetSink{pw: pw}, nil
}

func (p *parquetSink) write(rec record, vals []any) error {
	if rec.row == nil {
		return fmt.Errorf("%s: a Parquet output takes rows (a bug: the record has none)", rec.pos())
	}
	return p.pw.Write(rec.row, vals)
}

func (p *parquetSink) close() error { return p.pw.Close() }
