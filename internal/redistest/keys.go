package redistest

import (
	"context"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Keys returns the keys matching pattern on every master of the cluster
// c's client reaches (KEYS on each: for tests, on small data).
func Keys(ctx context.Context, c *redis.ClusterClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var all []string
	err := c.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, pattern).Result()
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}
