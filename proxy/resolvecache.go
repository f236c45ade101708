package proxy

import (
	"context"
	"net/netip"
	"sync"
	"time"
)

// resolveCache keeps the answers of recent lookups of allowed names for a
// short time, so a burst of connections to one host costs one lookup. It
// stores raw answers: every use still goes through the dial guard, so a
// cached answer can never skip a check. Safe for concurrent use.
type resolveCache struct {
	r   Resolver
	ttl time.Duration

	mu sync.Mutex
	m  map[string]cacheEntry
}

type cacheEntry struct {
	addrs   []netip.Addr
	expires time.Time
}

const maxCacheEntries = 4096

func (c *resolveCache) LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error) {
	now := time.Now()
	c.mu.Lock()
	if e, ok := c.m[host]; ok && now.Before(e.expires) {
		c.mu.Unlock()
		return e.addrs, nil
	}
	c.mu.Unlock()
	addrs, err := c.r.LookupNetIP(ctx, network, host)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if len(c.m) >= maxCacheEntries {
		clear(c.m)
	}
	c.m[host] = cacheEntry{addrs: addrs, expires: now.Add(c.ttl)}
	c.mu.Unlock()
	return addrs, nil
}
