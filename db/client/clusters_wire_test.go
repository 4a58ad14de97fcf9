package client

import (
	"context"
	"strings"
	"testing"
)

// Ensure that a clusters answer whose members are not its ids, one for
// one, is refused as malformed, not returned as a db.Cluster whose Jaccard
// is shorter than its IDs: a server older than members sends none, and
// lshdb clusters and filter attached to it indexed past the end and
// panicked (a fuzz campaign's F1). The well-formed line is the oracle.
func TestReadClustersRefusesMembersThatAreNotTheIDs(t *testing.T) {
	good := `{"cluster":1,"size":2,"representative":"a","ids":["a","b"],"members":[{"id":"a","duplicate_of":null,"jaccard":1},{"id":"b","duplicate_of":"a","jaccard":0.9}]}` + "\n" + `{"end":{"lines":1}}` + "\n"
	cs, err := readClusters(context.Background(), strings.NewReader(good), 0)
	if err != nil || len(cs) != 1 || len(cs[0].Jaccard) != 2 || cs[0].Jaccard[1] != 0.9 {
		t.Fatalf("a well-formed cluster: %+v, %v", cs, err)
	}
	for _, line := range []string{
		`{"cluster":1,"size":2,"representative":"a","ids":["a","b"]}`,
		`{"cluster":1,"size":2,"representative":"a","ids":["a","b"],"members":[{"id":"a","jaccard":1}]}`,
		`{"cluster":1,"size":2,"representative":"a","ids":["a","b"],"members":[{"id":"a","jaccard":1},{"id":"c","jaccard":0.9}]}`,
		`{"cluster":1,"size":0,"representative":"a","ids":[],"members":[]}`,
	} {
		cs, err := readClusters(context.Background(), strings.NewReader(line+"\n"+`{"end":{"lines":1}}`+"\n"), 0)
		if err == nil || !strings.Contains(err.Error(), "malformed cluster") {
			t.Errorf("%s: %+v, %v; want a malformed cluster", line, cs, err)
		}
	}
}
