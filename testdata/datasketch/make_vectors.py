#!/usr/bin/env python3
"""Writes vectors.json: datasketch MinHash signatures of a few token lists.

lshdb's datasketch scheme (minhash.SchemeDatasketch) must give the same
hashvalues bit for bit; minhash/datasketch_test.go and db's tests read this
file. Run it with datasketch and numpy importable:

    pip install datasketch numpy    # or: PYTHONPATH=<a datasketch checkout>
    python3 testdata/datasketch/make_vectors.py > testdata/datasketch/vectors.json

Each update is datasketch's default: MinHash(num_perm, seed) with
hashfunc=sha1_hash32, and m.update(token.encode("utf-8")).
"""
import json
import os
import sys

import datasketch
import numpy
from datasketch import MinHash

TOKEN_LISTS = [
    [],
    ["hello"],
    ["the", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog"],
    ["the", "quick", "brown", "fox", "jumped", "over", "the", "lazy", "dogs"],
    ["Ünïcödé", "日本語", "emoji 🙂", "", "a b", "tab\tsep"],
    ["tok%d" % i for i in range(1000)],
]

# (num_perm, seed): datasketch's defaults, then others.
PARAMS = [(128, 1), (64, 7), (256, 0)]


def main():
    cases = []
    for num_perm, seed in PARAMS:
        for tokens in TOKEN_LISTS:
            m = MinHash(num_perm=num_perm, seed=seed)
            for t in tokens:
                m.update(t.encode("utf-8"))
            cases.append({
                "num_perm": num_perm,
                "seed": seed,
                "tokens": tokens,
                "hashvalues": [int(v) for v in m.hashvalues],
            })
    out = {
        "generator": "testdata/datasketch/make_vectors.py",
        "datasketch": getattr(datasketch, "__version__", "unknown"),
        # Where datasketch came from when its version says nothing (a
        # checkout reports 0.0.0): DATASKETCH_SOURCE, if set.
        "datasketch_source": os.environ.get("DATASKETCH_SOURCE", ""),
        "numpy": numpy.__version__,
    }
    # One case a line: a diff of a regenerated file stays readable.
    head = json.dumps(out, ensure_ascii=False)[:-1]
    sys.stdout.write(head + ', "cases": [\n')
    sys.stdout.write(",\n".join(json.dumps(c, ensure_ascii=False) for c in cases))
    sys.stdout.write("\n]}\n")


if __name__ == "__main__":
    main()
