// Requests that reach a GPU port in the same picosecond, handed over round robin over their
// sources, as a target port's arbiter takes its inputs in turn.
//
// Kept by PortTurns for the fabrics that time transfers themselves (ideal, flow). Why: a fabric's
// event queue keeps same-time events in the order they were pushed, which follows the GPUs'
// indices (the calendar runs the GPUs in that order), and the target's memory serves what comes
// in one picosecond first come, first served. So on the ideal fabric GPU 0's writes were served first at
// every peer, and a symmetric collective's GPUs ended up to 84 ns apart in index order
// (switch-8gpu, a 1 MiB direct all-reduce: 0.8% of the run; the flow fabric's mi300x-8gpu, 2.2 ns).
// Each target keeps a turn, the source after the one it took last, starting at the GPU after its
// own, and takes one request of each source in turn from there, so no index is favoured, a
// symmetric pattern stays symmetric, and two GPUs' trains to one GPU are served interleaved rather
// than one after the other.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

namespace eidola {

/// Each GPU port's round-robin turn over the sources of its same-instant requests.
class ArrivalTurns {
public:
    /// Turns for `ports` GPU ports, port i's at source i + 1.
    explicit ArrivalTurns(std::uint32_t ports) : m_turn(ports) {
        for (std::uint32_t i = 0; i < ports; ++i) m_turn[i] = (i + 1) % ports;
    }

    /// Puts `batch`, requests arriving in one picosecond, in the order the targets take them: by target, then
    /// in rounds, each round one request of every source that has one left, the sources from the target's
    /// turn on (a source outside the ports, such as an NVLS unit's own access, last). One source's requests
    /// keep their order (program order). Each target's turn moves past the last source it took.
    /// `target(x)` and `source(x)` give a request's port indices. `scratch` is the caller's storage for the
    /// reordering, kept between calls so that a reordered batch costs no allocation: what it holds is dropped,
    /// and it comes back empty.
    template <class T, class Target, class Source>
    void order(std::vector<T>& batch, std::vector<T>& scratch, Target target, Source source) {
        scratch.clear();
        const std::uint32_t n = std::uint32_t(m_turn.size());
        auto take = [&](const T& x) {  // the turn moves past the source taken
            if (source(x) < n) m_turn[target(x)] = (source(x) + 1) % n;
        };
        if (batch.size() == 1) {  // a lone request: nothing to order
            take(batch.front());
            return;
        }
        auto rank = [&](const T& x) {
            const std::uint32_t s = source(x);
            return s < n ? (s + n - m_turn[target(x)]) % n : n;
        };
        m_keys.clear();
        for (std::uint32_t i = 0; i < batch.size(); ++i) m_keys.push_back({target(batch[i]), 0, rank(batch[i]), i});
        // Each request's round: how many of its source's requests to its target came before it.
        std::sort(m_keys.begin(), m_keys.end(), [](const Key& a, const Key& b) {
            return a.target != b.target ? a.target < b.target : a.rank != b.rank ? a.rank < b.rank : a.index < b.index;
        });
        for (std::size_t i = 1; i < m_keys.size(); ++i)
            if (m_keys[i].target == m_keys[i - 1].target && m_keys[i].rank == m_keys[i - 1].rank)
                m_keys[i].round = m_keys[i - 1].round + 1;
        std::sort(m_keys.begin(), m_keys.end(), [](const Key& a, const Key& b) {
            if (a.target != b.target) return a.target < b.target;
            return a.round != b.round ? a.round < b.round : a.rank != b.rank ? a.rank < b.rank : a.index < b.index;
        });
        bool moved = false;
        for (std::uint32_t i = 0; i < m_keys.size(); ++i) moved = moved || m_keys[i].index != i;
        if (moved) {
            for (const Key& k : m_keys) scratch.push_back(std::move(batch[k.index]));
            batch.swap(scratch);
            scratch.clear();  // the old order's moved-from requests; the storage stays
        }
        for (const T& x : batch) take(x);
    }

private:
    struct Key {
        std::uint32_t target, round, rank, index;
    };
    std::vector<std::uint32_t> m_turn;  // per target port: the source it takes first next time
    std::vector<Key> m_keys;            // scratch of order()
};

}  // namespace eidola
