package cache

import (
	"container/list"
	"sync"
)

// lruMap is a byte-budgeted LRU map, a stand-in with the API of package
// evict's Map until that package is in the tree. Safe for concurrent use;
// onEvict runs outside the lock for entries pushed out by the budget and
// for replaced ones.
type lruMap[K comparable, V any] struct {
	mu        sync.Mutex
	budget    int64
	size      int64
	items     map[K]*list.Element
	order     list.List // front: most recently used
	onEvict   func(K, V)
	evictions uint64
}

type lruItem[K comparable, V any] struct {
	k    K
	v    V
	size int64
}

func newLRU[K comparable, V any](budget int64, onEvict func(K, V)) *lruMap[K, V] {
	return &lruMap[K, V]{budget: budget, items: make(map[K]*list.Element), onEvict: onEvict}
}

func (m *lruMap[K, V]) Get(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	m.order.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).v, true
}

func (m *lruMap[K, V]) Set(k K, v V, size int64) bool {
	if size > m.budget {
		return false
	}
	var out []*lruItem[K, V]
	m.mu.Lock()
	if el, ok := m.items[k]; ok {
		it := el.Value.(*lruItem[K, V])
		m.size -= it.size
		m.order.Remove(el)
		delete(m.items, k)
		out = append(out, it)
	}
	m.items[k] = m.order.PushFront(&lruItem[K, V]{k, v, size})
	m.size += size
	for m.size > m.budget {
		el := m.order.Back()
		it := el.Value.(*lruItem[K, V])
		m.order.Remove(el)
		delete(m.items, it.k)
		m.size -= it.size
		m.evictions++
		out = append(out, it)
	}
	m.mu.Unlock()
	if m.onEvict != nil {
		for _, it := range out {
			m.onEvict(it.k, it.v)
		}
	}
	return true
}

func (m *lruMap[K, V]) Delete(k K) (V, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	el, ok := m.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	it := el.Value.(*lruItem[K, V])
	m.order.Remove(el)
	delete(m.items, k)
	m.size -= it.size
	return it.v, true
}

func (m *lruMap[K, V]) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.items)
}

func (m *lruMap[K, V]) Size() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.size
}

func (m *lruMap[K, V]) Evictions() uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.evictions
}
