// A first-in, first-out queue in one contiguous array: a vector whose front is an offset, moved on
// by pop_front and folded back when the popped part is half the array.
//
// Why not std::deque: a deque allocates a map and a 512-byte chunk as soon as it exists, and its
// elements, its map and the object itself sit on different cache lines. The flow fabric keeps two
// small queues per GPU output (flow_issue.cpp: a send rate's history, the output's writes and
// signals) and reads their front, their back and their second entry at most of its events; at
// 1,024 GPUs each of those lines was a cache miss, where here the entries that are read together
// share a line and an empty queue costs no memory.
#pragma once

#include <cstddef>
#include <utility>
#include <vector>

namespace eidola {

/// A queue with random access to its entries (oldest first) and insertion anywhere; its storage
/// is contiguous, so begin() and end() are pointers.
template <class T>
class FrontQueue {
public:
    using iterator = T*;
    using const_iterator = const T*;

    bool empty() const { return m_head == m_items.size(); }
    std::size_t size() const { return m_items.size() - m_head; }
    T& front() { return m_items[m_head]; }
    const T& front() const { return m_items[m_head]; }
    T& back() { return m_items.back(); }
    const T& back() const { return m_items.back(); }
    T& operator[](std::size_t i) { return m_items[m_head + i]; }
    const T& operator[](std::size_t i) const { return m_items[m_head + i]; }
    iterator begin() { return m_items.data() + m_head; }
    iterator end() { return m_items.data() + m_items.size(); }
    const_iterator begin() const { return m_items.data() + m_head; }
    const_iterator end() const { return m_items.data() + m_items.size(); }

    void push_back(const T& item) { m_items.push_back(item); }
    template <class... Args>
    void emplace_back(Args&&... args) {
        m_items.emplace_back(std::forward<Args>(args)...);
    }
    /// Inserts `item` before `at` (an iterator of this queue); returns where it went.
    iterator insert(iterator at, const T& item) {
        const std::ptrdiff_t offset = at - m_items.data();
        return &*m_items.insert(m_items.begin() + offset, item);
    }
    /// Removes the entry at `at` (an iterator of this queue), keeping the others' order.
    void erase(iterator at) { m_items.erase(m_items.begin() + (at - m_items.data())); }
    /// Drops the oldest entry. The array is shifted down only once the dropped entries are at least
    /// as many as the live ones (and a few): each entry is moved at most once on average.
    void pop_front() {
        ++m_head;
        if (m_head == m_items.size()) {
            m_items.clear();
            m_head = 0;
        } else if (m_head >= kFoldAfter && 2 * m_head >= m_items.size()) {
            m_items.erase(m_items.begin(), m_items.begin() + std::ptrdiff_t(m_head));
            m_head = 0;
        }
    }
private:
    static constexpr std::size_t kFoldAfter = 8;  // a short queue is not shifted for every pop
    std::vector<T> m_items;
    std::size_t m_head = 0;  // index of the front entry in m_items
};

}  // namespace eidola
