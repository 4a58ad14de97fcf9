package main

import (
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
	"time"
)

// Ensure that a server gives back the memory a burst took once it is
// garbage (a server operator's review, S4: 2.2 GB resident 150 s after two
// puts of 30 MB, with 208 MB in use). The oracle: the runtime's own count
// of the heap memory released to the system.
func TestReturnMemory(t *testing.T) {
	released := func() uint64 {
		s := []rtmetrics.Sample{{Name: "/memory/classes/heap/released:bytes"}}
		rtmetrics.Read(s)
		return s[0].Value.Uint64()
	}
	burst := make([][]byte, 64)
	for i := range burst {
		burst[i] = make([]byte, 1<<20)
		burst[i][0] = 1
	}
	runtime.KeepAlive(burst)
	burst = nil
	before := released()
	stop := returnMemory(10*time.Millisecond, 8<<20)
	defer stop()
	for deadline := time.Now().Add(10 * time.Second); released() < before+32<<20; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("released %d bytes of a 64 MiB burst in 10 s, want at least 32 MiB", released()-before)
		}
	}
}
