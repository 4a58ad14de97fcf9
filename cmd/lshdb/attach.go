package main

// Attach: the commands talk to an index through one interface, which
// *db.DB satisfies in process and *client.Client when another process
// owns the index (lshdb serve) or --addr names a server. One code path:
// what a command prints does not depend on which it got.

import (
	"context"
	"errors"
	"iter"
	"os"
	"strings"

	"github.com/lshdb/lshdb/db"
	"github.com/lshdb/lshdb/db/client"
	"github.com/lshdb/lshdb/db/httpapi"
)

// index is what the commands need of an index.
type index interface {
	Params() db.Params
	MaxDocBytes() int
	Validate(d db.Doc) error
	Put(d db.Doc, wo *db.WriteOptions) error
	PutBatch(docs []db.Doc, wo *db.WriteOptions) (db.BatchResult, error)
	PutIfNew(doc db.Doc, wo *db.WriteOptions) (*db.Match, error)
	Load(ctx context.Context, docs iter.Seq2[db.Doc, error], lo *db.LoadOptions) (db.LoadResult, error)
	Get(id string) (*db.StoredDoc, error)
	DeleteIDs(ids []string, o *db.WriteOptions) (db.DeleteResult, error)
	Query(ctx context.Context, text string, qo *db.QueryOptions) (*db.QueryResult, error)
	QueryID(ctx context.Context, id string, qo *db.QueryOptions) (*db.QueryResult, error)
	Pairs(ctx context.Context, po *db.PairsOptions) iter.Seq2[db.Pair, error]
	Scan(ctx context.Context, so *db.ScanOptions) iter.Seq2[*db.StoredDoc, error]
	Clusters(ctx context.Context, po *db.PairsOptions) ([]db.Cluster, error)
	Info() (*db.Info, error)
	ClustersFrom(ctx context.Context, seq iter.Seq2[db.Pair, error], po *db.PairsOptions) ([]db.Cluster, error)
	Count() (uint64, error)
	Has(id string) (bool, error)
	Stats(ctx context.Context, top int) (*db.Stats, error)
	Buckets(ctx context.Context, band, top int) (*db.BucketStats, error)
	Bucket(band int, bucket uint64) ([]string, error)
	Explain(a, b string) (*db.Explanation, error)
	Check(ctx context.Context) (*db.CheckReport, error)
	PurgeEmptyLists(ctx context.Context) (int, error)
	Close() error
}

var (
	_ index = (*db.DB)(nil)
	_ index = (*client.Client)(nil)
)

// clientOptions are the options of an attached command's client: the
// token from LSHDB_TOKEN.
func clientOptions() *client.Options {
	return &client.Options{Token: os.Getenv("LSHDB_TOKEN")}
}

// attach connects to the server that owns the index in dir through its
// socket, checking opts' creation parameters against the index's as Open
// would.
func attach(dir string, opts *db.Options) (*client.Client, error) {
	c, err := client.Open(httpapi.SocketPath(dir), clientOptions())
	if err != nil {
		return nil, err
	}
	if err := checkOptions(opts, c.Params()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// connect opens a client of the server at --addr.
func (a *app) connect(opts *db.Options) (*client.Client, error) {
	if a.dbDir != "" {
		return nil, usagef("give --db DIR or --addr URL, not both")
	}
	c, err := client.Open(a.addr, clientOptions())
	if err != nil {
		return nil, err
	}
	if err := checkOptions(opts, c.Params()); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// checkOptions refuses non-zero creation options that differ from an
// attached index's parameters, with the errors db.Open gives.
func checkOptions(o *db.Options, p db.Params) error {
	if o == nil {
		return nil
	}
	check := func(field string, set bool, stored, requested any) error {
		if set && stored != requested {
			return &db.MismatchError{Field: field, Stored: stored, Requested: requested}
		}
		return nil
	}
	return errors.Join(
		check("Threshold", o.Threshold != 0, p.Threshold, o.Threshold),
		check("Recall", o.Recall != 0, p.Recall, o.Recall),
		check("Bands", o.Bands != 0, p.Bands.B, o.Bands),
		check("Rows", o.Rows != 0, p.Bands.R, o.Rows),
		check("NumPerm", o.NumPerm != 0, p.NumPerm, o.NumPerm),
		check("Scheme", o.Scheme != 0, p.Scheme.String(), o.Scheme.String()),
		check("Seed", o.Seed != 0, p.Seed, o.Seed),
		check("Shingle", o.Shingle != 0, p.Shingle.String(), o.Shingle.String()),
		check("ShingleSize", o.ShingleSize != 0, p.ShingleSize, o.ShingleSize),
		check("Bag", o.Bag, p.Bag, o.Bag),
		check("Normalization", o.Normalization != 0, p.Normalization.String(), o.Normalization.String()),
		check("StopWords", len(o.StopWords) != 0, strings.Join(p.StopWords, ","), strings.Join(o.StopWords, ",")),
		check("StoreText", o.StoreText, p.StoreText, o.StoreText),
		check("Storage", o.Storage != "", p.Storage, o.Storage),
	)
}
