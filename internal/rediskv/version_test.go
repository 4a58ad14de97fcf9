package rediskv

import "testing"

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
