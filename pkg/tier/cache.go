package tier

import (
	"container/list"
	"sync"
	"sync/atomic"
)

// Cache is an LRU of byte slices with a byte budget: segment indexes and,
// for read-ahead, whole segment artifacts. It is safe for concurrent use.
// A warm fetch function keeps it across invocations.
type Cache struct {
	budget int64

	mu    sync.Mutex
	used  int64
	ll    *list.List // front: most recent
	items map[string]*list.Element

	hits, misses, evictions atomic.Int64
}

type cacheItem struct {
	key string
	val any
	n   int64
}

// DefaultCacheBytes is the cold-tier cache's default budget.
const DefaultCacheBytes = 256 << 20

// NewCache returns a cache holding at most budget bytes.
func NewCache(budget int64) *Cache {
	return &Cache{budget: budget, ll: list.New(), items: map[string]*list.Element{}}
}

// Get returns the value under key and counts a hit or a miss.
func (c *Cache) Get(key string) (any, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		c.ll.MoveToFront(el)
		c.hits.Add(1)
		return el.Value.(*cacheItem).val, true
	}
	c.misses.Add(1)
	return nil, false
}

// Put stores val (n bytes) under key, evicting the least recently used
// entries to stay within the budget. A value larger than the budget is not
// stored.
func (c *Cache) Put(key string, val any, n int64) {
	if c == nil || n > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[key]; ok {
		it := el.Value.(*cacheItem)
		c.used += n - it.n
		it.val, it.n = val, n
		c.ll.MoveToFront(el)
	} else {
		c.items[key] = c.ll.PushFront(&cacheItem{key: key, val: val, n: n})
		c.used += n
	}
	for c.used > c.budget {
		el := c.ll.Back()
		it := el.Value.(*cacheItem)
		c.ll.Remove(el)
		delete(c.items, it.key)
		c.used -= it.n
		c.evictions.Add(1)
	}
}

// Contains reports whether key is cached, without counting or promoting.
func (c *Cache) Contains(key string) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.items[key]
	return ok
}

// Reset empties the cache (the counters stay).
func (c *Cache) Reset() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ll.Init()
	c.items = map[string]*list.Element{}
	c.used = 0
}

// CacheStats are a cache's counters.
type CacheStats struct {
	Hits, Misses, Evictions, Bytes int64
}

// Stats returns the counters.
func (c *Cache) Stats() CacheStats {
	if c == nil {
		return CacheStats{}
	}
	c.mu.Lock()
	used := c.used
	c.mu.Unlock()
	return CacheStats{Hits: c.hits.Load(), Misses: c.misses.Load(), Evictions: c.evictions.Load(), Bytes: used}
}
