// The flow solver's fill levels in a 4-ary min-heap that holds at most one entry per resource and
// knows where each one is, so that an entry can move in place.
//
// Why: the fill (FlowSolver::fill_by_heap) pops the lowest (level, resource) and, where a freeze
// moved a resource's level, has it go up (the popped entry was out of date) or down (rounding).
// With a plain binary heap queued lazily, each move was a new entry (a sift up), the entry it
// replaced stayed until popped (a sift down of a dead entry), and the heap grew by both: std's heap
// operations were a tenth of a 256 MiB all-to-all on rail-16gpu. Here a rise is one sift down of
// the top, a fall one sift up, and nothing dead is popped. Four children a node: half the depth of
// a binary heap, the four children of a node in one or two cache lines.
//
// Order: (level, resource) is a total order and there is one entry per resource, so the pops come
// in exactly the order any correct heap of the same entries gives (bit for bit the lazy heap's
// steps, since every entry is a lower bound of its resource's level in both).
#pragma once

#include <cstdint>
#include <vector>

namespace eidola {

/// Min-heap of (level, resource), one entry per resource, each movable where it stands.
class LevelHeap {
public:
    /// A resource's fill level in the heap.
    struct Entry {
        double level;
        std::uint32_t resource;
    };

    /// Empties the heap and makes room to index resources below `resources`.
    void reset(std::size_t resources) {
        for (const Entry& e : m_entries) m_where[e.resource] = kAbsent;
        m_entries.clear();
        if (m_where.size() < resources) m_where.resize(resources, kAbsent);
    }
    /// Adds an entry without ordering the heap: for filling it before build().
    void add(double level, std::uint32_t resource) {
        m_where[resource] = std::uint32_t(m_entries.size());
        m_entries.push_back(Entry{level, resource});
    }
    /// Orders the entries added since reset() (bottom up, linear time).
    void build() {
        if (m_entries.size() < 2) return;
        for (std::size_t i = (m_entries.size() - 2) / kArity + 1; i-- > 0;) sift_down(i);
    }
    bool empty() const { return m_entries.empty(); }
    /// The lowest (level, resource).
    const Entry& top() const { return m_entries.front(); }
    /// Takes the lowest entry out.
    void pop() {
        m_where[m_entries.front().resource] = kAbsent;
        const Entry last = m_entries.back();
        m_entries.pop_back();
        if (m_entries.empty()) return;
        place(0, last);
        sift_down(0);
    }
    /// Gives the lowest entry a level at least as high as its own.
    void raise_top(double level) {
        m_entries.front().level = level;
        sift_down(0);
    }
    /// Gives `resource` the level `level`, not above its entry's: a new entry where it has none.
    void lower(std::uint32_t resource, double level) {
        std::uint32_t at = m_where[resource];
        if (at == kAbsent) {
            at = std::uint32_t(m_entries.size());
            m_entries.push_back(Entry{level, resource});
        }
        m_entries[at].level = level;
        sift_up(at);
    }

private:
    static constexpr std::uint32_t kAbsent = ~std::uint32_t(0);
    static constexpr std::size_t kArity = 4;

    static bool before(const Entry& a, const Entry& b) {
        return a.level < b.level || (a.level == b.level && a.resource < b.resource);
    }
    void place(std::size_t i, const Entry& e) {
        m_entries[i] = e;
        m_where[e.resource] = std::uint32_t(i);
    }
    void sift_down(std::size_t i) {
        const Entry e = m_entries[i];
        const std::size_t n = m_entries.size();
        for (;;) {
            const std::size_t first = kArity * i + 1;
            if (first >= n) break;
            const std::size_t end = first + kArity < n ? first + kArity : n;
            std::size_t least = first;
            for (std::size_t c = first + 1; c < end; ++c)
                if (before(m_entries[c], m_entries[least])) least = c;
            if (!before(m_entries[least], e)) break;
            place(i, m_entries[least]);
            i = least;
        }
        place(i, e);
    }
    void sift_up(std::size_t i) {
        const Entry e = m_entries[i];
        while (i > 0) {
            const std::size_t parent = (i - 1) / kArity;
            if (!before(e, m_entries[parent])) break;
            place(i, m_entries[parent]);
            i = parent;
        }
        place(i, e);
    }

    std::vector<Entry> m_entries;
    std::vector<std::uint32_t> m_where;  // per resource: its entry's place, kAbsent when it has none
};

}  // namespace eidola
