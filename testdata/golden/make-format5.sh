#!/bin/sh
# Makes the golden format 5 indexes (testdata/golden/format5/{text,sets,none})
# from format1/docs.jsonl, as format 2's and 3's were made: a build of 36
# documents, an insert of 4, an insert and a delete, with --num-perm 64
# --threshold 0.5. Run from the repository's root with the lshdb of the
# format (go build -o /tmp/lshdb ./cmd/lshdb): LSHDB=/tmp/lshdb sh $0
set -eu
LSHDB=${LSHDB:-lshdb}
src=testdata/golden/format1/docs.jsonl
for mode in text sets none; do
	dir=testdata/golden/format5/$mode
	rm -rf "$dir"
	head -n 36 "$src" | "$LSHDB" build --db "$dir" --storage "$mode" --num-perm 64 --threshold 0.5 - >/dev/null
	tail -n 4 "$src" | "$LSHDB" insert --db "$dir" - >/dev/null
	echo '{"id":"passing","text":"a document inserted and deleted again"}' | "$LSHDB" insert --db "$dir" - >/dev/null
	"$LSHDB" delete --db "$dir" passing >/dev/null
	rm -f "$dir/LOCK" "$dir/lshdb.lock"
done
