// A bound on the over-time bins a fabric holds (LinkStats::busy_bins and byte_bins): past stats.max_bins the
// bins double in width, as often as it takes, and the results say the width they ended at (Fabric::bin_ps).
// Why: bins are kept per link for the whole run, 16 bytes each, so their count grows with the simulated time
// over stats.bin. A 64 MiB write through a one-flit buffer simulates 1.3 s and wrote 275 MB of link_bins.csv at
// 1 us bins; a paced flow over minutes of simulated time needed gigabytes a link, and limits.memory stopped it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace eidola {

/// Counts the bins a fabric holds against its budget and keeps the width they are in.
class BinBudget {
public:
    /// Bins `width_ps` wide at first (at least 1 ps), at most `max_bins` held before they are coarsened.
    BinBudget(std::uint64_t width_ps, std::uint64_t max_bins)
        : m_width_ps(width_ps ? width_ps : 1), m_max(max_bins ? max_bins : 1), m_trigger(m_max) {}
    /// The bins' width now, in ps.
    std::uint64_t width_ps() const { return m_width_ps; }
    /// Times the width has doubled.
    std::uint32_t doublings() const { return m_doublings; }
    /// Whether `held` bins `width_ps` wide are past the budget and can still widen: the rule for bins a fabric makes
    /// at the end of a run, outside add() (they are widened there in one go, not as they come).
    bool over_at_end(std::size_t held, std::uint64_t width_ps, std::uint64_t now_ps) const {
        return held > m_max && width_ps <= now_ps;
    }
    /// Counts `n` more bins held; true when the fabric should coarsen them (coarsen() with its bins).
    bool add(std::size_t n = 1) {
        m_held += n;
        return m_held > m_trigger;
    }
    /// Doubles the width while more than half the budget is held, `halve(width)` merging the fabric's bins
    /// into ones of the new width and returning how many it then holds. Stops once one bin spans the whole run so
    /// far (`now_ps`), where every link has at most one: the budget is then raised to twice what is held, so that
    /// a fabric with more links than the budget does not coarsen again at every bin.
    template <class Halve>
    void coarsen(std::uint64_t now_ps, Halve&& halve) {
        constexpr std::uint64_t kWidest = std::uint64_t(1) << 62;
        while (m_held > m_max / 2 && m_width_ps <= now_ps && m_width_ps < kWidest) {
            m_width_ps *= 2;
            ++m_doublings;
            m_held = halve(m_width_ps);
        }
        m_trigger = m_held > m_max / 2 ? 2 * m_held : m_max;
    }

private:
    std::uint64_t m_width_ps;
    std::uint64_t m_max;
    std::uint64_t m_trigger;  // coarsen past this many
    std::size_t m_held = 0;
    std::uint32_t m_doublings = 0;
};

/// Sparse (bin, value) pairs in bin order, merged in place into bins twice as wide (bin / 2, values summed).
template <class V>
void halve_bins(std::vector<std::pair<std::uint64_t, V>>& bins) {
    std::size_t kept = 0;
    for (std::size_t i = 0; i < bins.size(); ++i) {
        const std::uint64_t bin = bins[i].first / 2;
        if (kept > 0 && bins[kept - 1].first == bin) {
            bins[kept - 1].second += bins[i].second;
        } else {
            bins[kept++] = {bin, bins[i].second};
        }
    }
    bins.resize(kept);
}

}  // namespace eidola
