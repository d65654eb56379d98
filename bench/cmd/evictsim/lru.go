package main

import (
	"container/list"
	"sync"
)

// lru is a byte-budgeted LRU with one mutex, the baseline.
type lru struct {
	mu     sync.Mutex
	ll     *list.List
	items  map[string]*list.Element
	size   int64
	budget int64
}

type lruEnt struct {
	k    string
	v    int64
	size int64
}

func newLRU(b int64) *lru { return &lru{ll: list.New(), items: map[string]*list.Element{}, budget: b} }

func (c *lru) Get(k string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		c.ll.MoveToFront(e)
		return e.Value.(*lruEnt).v, true
	}
	return 0, false
}

func (c *lru) Set(k string, v, size int64) bool {
	if size > c.budget {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[k]; ok {
		en := e.Value.(*lruEnt)
		c.size += size - en.size
		en.v, en.size = v, size
		c.ll.MoveToFront(e)
	} else {
		c.items[k] = c.ll.PushFront(&lruEnt{k, v, size})
		c.size += size
	}
	for c.size > c.budget {
		e := c.ll.Back()
		en := e.Value.(*lruEnt)
		c.ll.Remove(e)
		delete(c.items, en.k)
		c.size -= en.size
	}
	return true
}
