package rediskv

import (
	"errors"
	"fmt"
	"testing"
)

// Ensure that the version check passes Redis 6.2 and later (and Valkey,
// which reports a Redis version), refuses what is older, and passes a
// version it cannot read. The oracle: the versions' order by hand.
func TestVersionAtLeast(t *testing.T) {
	for v, want := range map[string]bool{
		"6.2.0": true, "6.2.14": true, "7.0.15": true, "7.2.4": true, "10.0.0": true,
		"6.0.16": false, "5.0.14": false, "6.1.9": false, "4.0": false,
		"": true, "unstable": true, "6": true,
	} {
		if got := versionAtLeast(v, 6, 2); got != want {
			t.Errorf("versionAtLeast(%q, 6, 2) = %v, want %v", v, got, want)
		}
	}
}

// redisReply is an error reply of Redis, as go-redis gives one.
type redisReply string

func (e redisReply) Error() string { return string(e) }
func (redisReply) RedisError()     {}

// Ensure that a write refused at maxmemory is told from other replies in
// both forms: Redis 7's "OOM …" and Redis 6's script error around it;
// and that what a failover gives is not permanent.
func TestOutOfMemoryAndPermanent(t *testing.T) {
	for reply, want := range map[string][2]bool{ // OutOfMemory, Permanent
		"OOM command not allowed when used memory > 'maxmemory'.":                                                               {true, true},
		"ERR Error running script (call to f_999b6a): @user_script:1: -OOM command not allowed when used memory > 'maxmemory'.": {true, true},
		"NOAUTH Authentication required.":                                                                                       {false, true},
		"WRONGPASS invalid username-password pair":                                                                              {false, true},
		"ERR unknown command 'getdel'":                                                                                          {false, true},
		"CLUSTERDOWN The cluster is down":                                                                                       {false, false},
		"TRYAGAIN Multiple keys request during rehashing of slot":                                                               {false, false},
		"LOADING Redis is loading the dataset in memory":                                                                        {false, false},
		"READONLY You can't write against a read only replica.":                                                                 {false, false},
	} {
		err := fmt.Errorf("writing: %w", redisReply(reply))
		if got := [2]bool{OutOfMemory(err), Permanent(err)}; got != want {
			t.Errorf("%q: OutOfMemory, Permanent = %v, want %v", reply, got, want)
		}
	}
	if OutOfMemory(errors.New("OOM command not allowed")) {
		t.Error("an error that is no reply of Redis taken for one")
	}
}
