module github.com/lshdb/lshdb

go 1.26

require (
	github.com/cespare/xxhash/v2 v2.3.0
	github.com/vmihailenco/msgpack/v5 v5.4.1
)

require (
	github.com/stretchr/testify v1.9.0 // indirect
	github.com/vmihailenco/tagparser/v2 v2.0.0 // indirect
)
