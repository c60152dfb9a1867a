#include "eidola/flow_solver.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace eidola {

namespace {
// The refilled set grows past this share of the flows (plus a floor for small fabrics): refilling
// the component at once is then cheaper than growing the set step by step.
constexpr std::size_t kSetFloor = 64;
constexpr std::size_t kSetShare = 4;   // a quarter of the active flows
constexpr int kMaxSteps = 32;          // refills of a growing set before falling back
constexpr int kMaxSettle = 32;         // fills of settle() (each cuts a served-first load's error some 20-fold)
constexpr int kMaxSolved = 4;          // fills of settle() whose bottlenecks' levels are solved for (solve_levels)
constexpr int kMaxSweeps = 64;         // Gauss-Seidel sweeps of solve_levels() before it solves directly
constexpr std::size_t kMaxDirect = 256;  // most bottlenecks solve_levels_directly() takes (a dense n x n system)
constexpr double kSweepTolerance = 1e-14;  // solve_levels() stops when no level moves by more (relative)
constexpr double kSnap = 1e-12;            // levels this close (relative) are one (snap_levels)
// A resource loaded beyond its capacity by more than this share is no flow's bottleneck. Far above
// the fill's rounding, and the rates kept within kTolerance of their old ones (each moves its
// share of a load by at most that), far below anything that moves a finish by a picosecond.
constexpr double kOverload = 5e-9;
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();
}  // namespace

std::uint32_t FlowSolver::add_resource(double capacity) {
    if (!(capacity > 0)) throw std::invalid_argument("flow solver: a resource needs a positive capacity");
    m_resources.push_back(Resource{capacity});
    m_load.push_back(0.0);
    m_tagged_load.push_back(0.0);
    m_measured.emplace_back();
    m_resource_mark.push_back(0);
    return std::uint32_t(m_resources.size() - 1);
}

void FlowSolver::set_capacity(std::uint32_t resource, double capacity) {
    if (!(capacity > 0)) throw std::invalid_argument("flow solver: a resource needs a positive capacity");
    m_resources[resource].capacity = capacity;
    m_dirty.push_back(resource);
}

namespace {
// The hash of a use list: resources and the bits of their weights (groups need identical ones).
std::uint64_t uses_key(const std::vector<FlowSolver::Use>& uses) {
    std::uint64_t h = 0x9e3779b97f4a7c15ull ^ uses.size();
    auto mix = [&](std::uint64_t v) {
        h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h = (h ^ (h >> 31)) * 0xbf58476d1ce4e5b9ull;
    };
    for (const FlowSolver::Use& u : uses) {
        std::uint64_t bits;
        std::memcpy(&bits, &u.weight, sizeof bits);
        mix(u.resource);
        mix(bits);
        mix(u.first);
    }
    return h;
}
}  // namespace

std::uint32_t FlowSolver::find_group(const std::vector<Use>& uses, std::uint64_t key, bool tagged) {
    const std::uint32_t found = m_index.find(key);
    if (found == FlatIndex::kAbsent) return kNone;
    const UseList mine = this->uses(found);
    if (mine.size() != uses.size() || m_groups[found].tagged != tagged) return kNone;
    for (std::size_t i = 0; i < uses.size(); ++i)
        if (mine[i].resource != uses[i].resource || bool(mine[i].first) != uses[i].first ||
            std::memcmp(&mine[i].weight, &uses[i].weight, sizeof(double)) != 0)
            return kNone;  // a hash collision: the newcomer gets a group of its own
    return found;
}

std::uint32_t FlowSolver::new_group(const std::vector<Use>& uses, std::uint64_t key, bool tagged, bool indexed) {
    std::uint32_t id;
    if (!m_free_groups.empty()) {
        id = m_free_groups.back();
        m_free_groups.pop_back();
    } else {
        id = std::uint32_t(m_groups.size());
        m_groups.emplace_back();
        m_spill.emplace_back();
        m_group_flows.emplace_back();
        m_group_key.push_back(0);
        m_group_mark.push_back(0);
        m_rate.push_back(0);
        m_estimate.push_back(0);
        m_bottleneck.push_back(kNone);
    }
    Group& g = m_groups[id];
    g.active = true;
    m_rate[id] = g.old_rate = 0;
    g.count = 0;
    m_bottleneck[id] = kNone;
    g.size = std::uint32_t(uses.size());
    Uses* mine = g.local;
    if (g.size > kInlineUses) {  // m_spill[id] was left empty by the group's last use
        m_spill[id].resize(g.size);
        mine = m_spill[id].data();
    }
    // Served first only beside a use that is not: a flow must have a resource that can hold it back.
    const bool fair = std::any_of(uses.begin(), uses.end(), [](const Use& u) { return !u.first; });
    g.first = false;
    g.tagged = tagged;
    for (std::uint32_t i = 0; i < g.size; ++i) {
        const Use& u = uses[i];
        Resource& r = m_resources[u.resource];
        const bool first = fair && u.first;
        g.first = g.first || first;
        mine[i] = Uses{u.resource, std::uint32_t(r.members.size()), first, u.weight, 0.0};
        r.members.push_back(Member{id, i, first, tagged, 0.0});
    }
    m_group_key[id] = key;
    if (indexed) m_index.insert(key, id);  // kept by an earlier group on a collision: this one stays unindexed
    ++m_active;
    return id;
}

// The group's weights follow its flow count.
void FlowSolver::set_count(std::uint32_t id, std::uint32_t count) {
    m_groups[id].count = count;
    for (Uses& u : uses(id)) {
        u.total = u.weight * double(count);
        m_resources[u.resource].members[u.position].weight = u.total;
    }
}

// Room for flow id `id` in the per-flow arrays; it must not be there yet.
void FlowSolver::make_room(std::uint32_t id) {
    if (id >= m_group_of.size()) {
        m_group_of.resize(std::size_t(id) + 1, kNone);
        m_slot.resize(m_group_of.size(), 0);
        m_reported.resize(m_group_of.size(), 0);
        m_flow_uses.resize(m_group_of.size());
    }
    if (m_group_of[id] != kNone) throw std::logic_error("flow solver: flow added twice");
}

void FlowSolver::add_flow(std::uint32_t id, const std::vector<Use>& uses, bool tagged) {
    make_room(id);
    const std::uint64_t key = uses_key(uses) ^ (tagged ? 0x5bd1e9955bd1e995ull : 0);
    std::uint32_t g = find_group(uses, key, tagged);
    if (g == kNone) g = new_group(uses, key, tagged);
    std::vector<std::uint32_t>& flows = m_group_flows[g];
    m_group_of[id] = g;
    m_slot[id] = std::uint32_t(flows.size());
    flows.push_back(id);
    set_count(g, m_groups[g].count + 1);
    m_reported[id] = std::uint32_t(m_solves);  // not the stamp of the coming solve
    m_new_groups.push_back(g);
    m_new_flows.push_back(id);
}

void FlowSolver::remove_flow(std::uint32_t id) {
    if (id >= m_group_of.size() || m_group_of[id] == kNone)
        throw std::logic_error("flow solver: removing a flow that is not there");
    const std::uint32_t gi = m_group_of[id];
    if (m_groups[gi].coupled) {  // its record is read below anyway: no look-up of its own on this path
        remove_coupled(id);
        return;
    }
    m_group_of[id] = kNone;
    std::vector<std::uint32_t>& flows = m_group_flows[gi];
    const std::uint32_t moved = flows.back();
    flows[m_slot[id]] = moved;
    m_slot[moved] = m_slot[id];
    flows.pop_back();
    Group& g = m_groups[gi];
    const UseList mine = uses(gi);
    for (const Uses& u : mine) m_dirty.push_back(u.resource);
    if (!flows.empty()) {  // the rest hold their rate until the solve: a group still, lighter
        set_count(gi, g.count - 1);
        return;
    }
    drop_group(gi);
}

// Group `gi`, now without flows, leaves its resources and is free for reuse.
void FlowSolver::drop_group(std::uint32_t gi) {
    Group& g = m_groups[gi];
    g.active = false;
    g.coupled = false;
    for (const Uses& u : uses(gi)) {
        Resource& r = m_resources[u.resource];
        const Member last = r.members.back();
        r.members[u.position] = last;
        uses(last.group)[last.use].position = u.position;
        r.members.pop_back();
    }
    if (g.size > kInlineUses) m_spill[gi].clear();
    g.size = 0;
    g.count = 0;
    m_rate[gi] = 0;
    m_group_flows[gi].clear();
    if (m_index.find(m_group_key[gi]) == gi) m_index.erase(m_group_key[gi]);
    m_free_groups.push_back(gi);
    --m_active;
}

// The flows of key `couple` (m_couple_flows) as one group over the sum of their uses, at `rate` until the
// next solve. The group is kept out of the index of uses, so no uncoupled flow joins it.
void FlowSolver::build_coupled(std::uint64_t couple, bool tagged, double rate) {
    m_couple_uses.clear();
    for (std::uint32_t f : m_couple_flows)
        for (const Use& u : m_flow_uses[f]) {
            auto same = std::find_if(m_couple_uses.begin(), m_couple_uses.end(),
                                     [&](const Use& v) { return v.resource == u.resource; });
            if (same == m_couple_uses.end()) m_couple_uses.push_back(u);
            else {
                same->weight += u.weight;
                same->first = same->first && u.first;  // served first only if all of it is
            }
        }
    const std::uint32_t g = new_group(m_couple_uses, couple, tagged, false);
    m_groups[g].coupled = true;
    std::vector<std::uint32_t>& flows = m_group_flows[g];
    for (std::uint32_t f : m_couple_flows) {
        m_group_of[f] = g;
        m_slot[f] = std::uint32_t(flows.size());
        flows.push_back(f);
    }
    set_count(g, 1);  // the sum is the group's weight: one rate for all
    m_rate[g] = rate;
    for (const Use& u : m_couple_uses) m_dirty.push_back(u.resource);
    m_couples.insert(couple, g);
    m_new_groups.push_back(g);
}

// Takes key `couple`'s group apart: its flows but `leaving` into m_couple_flows, its resources marked changed;
// returns its rate (0 without a group).
double FlowSolver::dissolve_coupled(std::uint64_t couple, std::uint32_t leaving) {
    m_couple_flows.clear();
    const std::uint32_t g = m_couples.find(couple);
    if (g == FlatIndex::kAbsent) return 0;
    for (std::uint32_t f : m_group_flows[g])
        if (f != leaving) m_couple_flows.push_back(f);
    const double rate = m_rate[g];
    for (const Uses& u : uses(g)) m_dirty.push_back(u.resource);
    m_couples.erase(couple);
    drop_group(g);
    return rate;
}

void FlowSolver::add_coupled_flow(std::uint32_t id, const std::vector<Use>& uses, bool tagged, std::uint64_t couple) {
    if (couple == 0) {
        add_flow(id, uses, tagged);
        return;
    }
    make_room(id);
    m_flow_uses[id] = uses;
    const double rate = dissolve_coupled(couple, kNone);
    m_couple_flows.push_back(id);
    build_coupled(couple, tagged, rate);
    m_reported[id] = std::uint32_t(m_solves);  // not the stamp of the coming solve
    m_new_flows.push_back(id);
}

// Ends coupled flow `id`: the rest of its key's flows are one group again without it.
void FlowSolver::remove_coupled(std::uint32_t id) {
    const std::uint32_t g = m_group_of[id];
    const std::uint64_t couple = m_group_key[g];  // a coupled group's key is its couple key
    const bool tagged = m_groups[g].tagged;       // alike for all of a key's flows
    m_group_of[id] = kNone;
    m_flow_uses[id].clear();
    const double rate = dissolve_coupled(couple, id);
    if (!m_couple_flows.empty()) build_coupled(couple, tagged, rate);
}

void FlowSolver::touch(std::uint32_t resource) {
    std::uint32_t& mark = m_resource_mark[resource];
    if (mark == m_generation) return;
    mark = m_generation;
    m_touched.push_back(resource);
}

void FlowSolver::add_to_set(std::uint32_t id) {
    Group& g = m_groups[id];
    m_group_mark[id] = m_generation;
    g.old_rate = m_rate[id];
    m_set.push_back(id);
    for (const Uses& u : uses(id)) touch(u.resource);
}

// S starts as the new flows, with the resources that lost or gained a flow touched; then refill
// and check until the check passes, or refill the component. The order of everything follows the
// order of the calls since the last solve, so it is deterministic.
void FlowSolver::compute() {
    ++m_solves;
    start();
    // A small component is cheaper to refill at once than to refill and check in steps (and a
    // fabric of a few GPUs is mostly small components): look for its end first, a few flows deep.
    // The look costs up to kSmallComponent flows' worth of walking when the component is large,
    // which on a fabric of hundreds of GPUs it nearly always is: after a look that found a large
    // one, the next 1, 2, 4 .. kMaxBackoff solves go straight to the incremental path (which is
    // right for a small component too, only dearer), back to looking after a small one.
    bool small = false, looked = false;
    if (m_small_component > 0 && !(m_backoff_on && m_look.skipping())) {
        looked = true;
        small = collect_component(m_small_component);
        if (small) m_look.paid();
        else if (m_backoff_on) m_look.wasted();
    }
    if (looked && !small) start();  // drop what the look added
    m_dirty.clear();
    m_new_groups.clear();
    if (small) {
        if (!settle()) measure();
        return;
    }
    if (m_incremental && !(m_backoff_on && m_refill_whole.skipping())) {
        const std::uint64_t work = m_work;
        seed();
        for (int step = 0; step < kMaxSteps; ++step) {
            if (!settle()) measure();
            const std::size_t before = m_set.size();
            if (check()) {
                if (m_backoff_on && dearer_than_whole(m_work - work, step)) m_refill_whole.wasted();
                else m_refill_whole.paid();
                return;
            }
            if (m_set.size() == before || m_set.size() > kSetFloor + m_active / kSetShare) break;
            // Past what a whole refill costs, the attempt cannot pay any more: cut the loss.
            if (m_backoff_on && past_whole(m_work - work)) break;
        }
        if (m_backoff_on) m_refill_whole.wasted();  // the attempt was wasted: refill whole for a while
    }
    ++m_full_solves;
    const std::uint64_t work = m_work;
    collect_component(kUnbounded);
    if (!settle()) measure();
    // A running mean (weight 1/4 on the newest) of what refilling the component costs now.
    const double whole = double(m_work - work);
    m_whole_work = m_whole_work < 0 ? whole : 0.75 * m_whole_work + 0.25 * whole;
}

// Whether `work` is more than refilling the whole component has been costing (m_whole_work; false while
// unknown).
bool FlowSolver::past_whole(std::uint64_t work) const { return m_whole_work >= 0 && double(work) > m_whole_work; }

// Whether an incremental solve that passed after `steps` + 1 refills of S, at `work`, cost more than
// refilling the whole component does. Unknown (no whole refill yet), one that needed more than one
// refill counts as dearer, so the next solve refills whole and measures that.
bool FlowSolver::dearer_than_whole(std::uint64_t work, int steps) const {
    return m_whole_work < 0 ? steps > 0 : past_whole(work);
}

// Fills S, and while S has uses served first, fills it again with new estimates of the loads they
// take, until no rate of theirs moves by more than kTolerance from its estimate (or kMaxSettle fills).
// The first estimates are the groups' rates now: before the change, or as an earlier step of this
// solve's incremental path left them (its fills' rates are closer than the rates before the change).
// The next are the fixed point of the last fill's bottlenecks (solve_levels()), which a fill with
// the same bottlenecks reproduces: where those levels pass as max-min fair they are taken as the rates
// without that fill (adopt_levels()), else the fill runs: one or two fills a settle where iterating
// the rates took seven or eight (bench/RESULTS.md). Where solving fails, or after kMaxSolved tries, the
// estimates are the last fill's rates, which converge by some 20-fold a fill. Returns whether S's
// rates are measured already (adopted levels are).
bool FlowSolver::settle() {
    bool first = false;
    for (std::uint32_t id : m_set) {
        const double now = m_rate[id];
        m_estimate[id] = now == kUnlimited ? 0 : now;
        first = first || m_groups[id].first;
    }
    fill();
    int solved = 0;
    for (int round = 1; first && round < kMaxSettle; ++round) {
        bool moved = false;
        for (std::uint32_t id : m_set) {
            if (!m_groups[id].first) continue;
            const double rate = m_rate[id] == kUnlimited ? 0 : m_rate[id];
            if (std::fabs(rate - m_estimate[id]) > kTolerance * std::max(rate, m_estimate[id])) moved = true;
            m_estimate[id] = rate;
        }
        if (!moved) return false;
        if (solved < kMaxSolved && solve_levels()) {
            ++solved;
            if (adopt_levels()) return true;
        }
        fill();
    }
    return false;
}

// The served-first loads at which the last fill would give back the rates it was given, if its
// bottlenecks held. A fill leaves each of its bottlenecks (m_order) exactly full: the capacity less
// what the held groups take equals the loads of S's groups on it, each at the level of its own
// bottleneck, fair and served-first uses alike. That is one linear equation per bottleneck in their
// levels. Its fair terms come from bottlenecks that filled earlier (a group using a resource fairly
// is frozen there at the latest), so Gauss-Seidel in the fill's order is exact for them and
// converges at the rate of the served-first terms alone, a few percent of the loads (ten sweeps of
// a few hundred terms, where a fill walks every member of every touched resource). Sets the
// estimates of S's served-first groups to their bottleneck's level and returns true; false, with
// the estimates left alone, where the levels do not converge to positive ones.
bool FlowSolver::solve_levels() {
    const std::size_t n = m_order.size();
    if (n == 0) return false;
    if (m_order_pos.size() < m_resources.size()) m_order_pos.resize(m_resources.size());
    for (std::size_t i = 0; i < n; ++i) m_order_pos[m_order[i]] = std::uint32_t(i);
    m_terms.clear();
    m_rows.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        Row& row = m_rows[i];
        row.rest = m_resources[m_order[i]].capacity;
        row.diagonal = 0;
        row.begin = std::uint32_t(m_terms.size());
        for (const Member& m : m_resources[m_order[i]].members) {
            if (!(m.weight > 0)) continue;
            if (m_group_mark[m.group] != m_generation) {  // held at its rate, as the fill holds it
                row.rest -= m_rate[m.group] * m.weight;
                continue;
            }
            const std::uint32_t neck = m_bottleneck[m.group];
            if (neck == kNone) continue;  // unlimited: the fill counts its served-first loads as 0
            const std::uint32_t j = m_order_pos[neck];  // neck froze in this fill: it is in m_order
            if (j == i) row.diagonal += m.weight;
            else m_terms.push_back(Term{j, m.weight});
        }
        row.end = std::uint32_t(m_terms.size());
        if (!(row.diagonal > 0)) return false;
    }
    bool converged = false;
    for (int sweep = 0; sweep < kMaxSweeps && !converged; ++sweep) {
        double change = 0;
        bool positive = true;
        for (std::size_t i = 0; i < n && positive; ++i) {
            const Row& row = m_rows[i];
            double rest = row.rest;
            for (std::uint32_t t = row.begin; t < row.end; ++t) rest -= m_terms[t].weight * m_level[m_terms[t].column];
            const double level = rest / row.diagonal;
            positive = level > 0 && level != kUnlimited;
            change = std::max(change, std::fabs(level - m_level[i]) / level);
            m_level[i] = level;
        }
        if (!positive) break;
        converged = change <= kSweepTolerance;
    }
    if (!converged && !solve_levels_directly()) return false;
    snap_levels();
    for (std::uint32_t id : m_set)
        if (m_groups[id].first && m_bottleneck[id] != kNone) m_estimate[id] = m_level[m_order_pos[m_bottleneck[id]]];
    return true;
}

// solve_levels()'s system by Gaussian elimination with partial pivoting, where Gauss-Seidel does not converge:
// its sweeps shrink the error by the served-first weights over the fair ones around each cycle of bottlenecks,
// which near 1 (acknowledgements nearly as large as the packets they answer, one way and the other) takes
// thousands of sweeps, and past 1 diverges although the system has a positive solution. Sets m_level and
// returns true where the system has one solution, every level positive; false (the levels left anyhow) where
// not, or for more than kMaxDirect bottlenecks.
bool FlowSolver::solve_levels_directly() {
    const std::size_t n = m_rows.size();
    if (n > kMaxDirect) return false;
    m_dense.assign(n * (n + 1), 0.0);  // row i: its n coefficients, then its right-hand side
    auto at = [&](std::size_t i, std::size_t j) -> double& { return m_dense[i * (n + 1) + j]; };
    double scale = 0;  // a pivot this far below the largest weight is taken as 0: the system has no one solution
    for (std::size_t i = 0; i < n; ++i) {
        const Row& row = m_rows[i];
        scale = std::max(scale, row.diagonal);
        at(i, i) = row.diagonal;
        for (std::uint32_t t = row.begin; t < row.end; ++t) at(i, m_terms[t].column) += m_terms[t].weight;
        at(i, n) = row.rest;
    }
    for (std::size_t k = 0; k < n; ++k) {
        std::size_t pivot = k;
        for (std::size_t i = k + 1; i < n; ++i)
            if (std::fabs(at(i, k)) > std::fabs(at(pivot, k))) pivot = i;
        if (!(std::fabs(at(pivot, k)) > kSnap * scale)) return false;
        if (pivot != k)
            for (std::size_t j = k; j <= n; ++j) std::swap(at(k, j), at(pivot, j));
        for (std::size_t i = k + 1; i < n; ++i) {
            const double factor = at(i, k) / at(k, k);
            if (factor == 0) continue;
            for (std::size_t j = k; j <= n; ++j) at(i, j) -= factor * at(k, j);
        }
    }
    for (std::size_t k = n; k-- > 0;) {
        double rest = at(k, n);
        for (std::size_t j = k + 1; j < n; ++j) rest -= at(k, j) * m_level[j];
        const double level = rest / at(k, k);
        if (!(level > 0) || level == kUnlimited) return false;
        m_level[k] = level;
    }
    return true;
}

// Levels within kSnap of each other, relative, become the least of them. Why: Gauss-Seidel updates its rows
// in turn, each from the others' latest levels, so bottlenecks that are alike (every GPU's link in a
// symmetric collective) converge to levels an ulp or so apart, where a fill gives them one level, bit for
// bit. Their flows then end picoseconds apart instead of in one instant, each end a solve of its own: on
// switch-8gpu's 16 MiB direct all-reduce 3.9 times the solves and about 3 times the wall time of fills.
// Taking the least keeps every resource within its capacity; kSnap is far inside the solver's kTolerance.
void FlowSolver::snap_levels() {
    const std::size_t n = m_level.size();
    m_snap.resize(n);
    for (std::uint32_t i = 0; i < n; ++i) m_snap[i] = i;
    std::sort(m_snap.begin(), m_snap.end(), [&](std::uint32_t a, std::uint32_t b) {
        return m_level[a] < m_level[b] || (m_level[a] == m_level[b] && a < b);
    });
    for (std::size_t k = 1; k < n; ++k) {
        const double least = m_level[m_snap[k - 1]];
        double& level = m_level[m_snap[k]];
        if (level - least <= kSnap * level) level = least;
    }
}

// The rates the fill after solve_levels() would find, taken without running it: where the levels
// hold, that fill freezes the same bottlenecks in the same order, each exactly full, and so gives each
// group of S its bottleneck's level (to rounding: 2.3e-15 at most, relative, over a 1 GiB ring
// all-reduce on switch-8gpu, checked against the fill on every adoption). They hold when the allocation
// they make is the max-min fair one (the file comment's characterisation, which makes it unique): no
// touched resource over its capacity, and every group of S frozen by a resource that is full and on
// which no group has a higher fair rate. Returns false, the rates of S left for the fill to redo,
// where they do not. Why: most settles took two fills, the second only to confirm the levels (a
// 16-GPU torus all-to-all spends most of its time in the fills), and a measure costs a fill's first pass.
bool FlowSolver::adopt_levels() {
    for (std::uint32_t id : m_set) {
        double& rate = m_rate[id];
        if (rate == kUnlimited) continue;  // nothing holds it back: no level moves that
        const std::uint32_t neck = m_bottleneck[id];
        if (neck == kNone) return false;
        rate = m_level[m_order_pos[neck]];
        const double old = m_groups[id].old_rate;  // the fill's rule for a change within rounding
        if (old > 0 && old != kUnlimited && std::fabs(rate - old) <= kTolerance * old) rate = old;
    }
    measure();
    for (std::uint32_t ri : m_touched)
        if (m_measured[ri].load > m_resources[ri].capacity * (1 + kOverload)) return false;
    for (std::uint32_t id : m_set) {
        const double rate = m_rate[id];
        if (rate == kUnlimited) continue;
        const std::uint32_t neck = m_bottleneck[id];
        const Measured& r = m_measured[neck];
        if (r.load < m_resources[neck].capacity * (1 - kTolerance) || rate < r.top * (1 - kTolerance)) return false;
    }
    return true;
}

// Adds to S the held groups whose bottleneck is a resource the change touched: a flow came to or
// went from their bottleneck, so their rates move, and the first check would add them. Taking
// them in before the first fill spares that fill, its measure and its check (2.56 rounds per
// incremental solve of bench/flow_scale_driver.cpp's skewed traffic at 1,024 GPUs, 1.97 with this).
// The rates are the same allocation (it is unique); only the order of the sums differs.
void FlowSolver::seed() {
    const std::size_t changed = m_touched.size();  // not the resources the joining groups touch
    for (std::size_t i = 0; i < changed; ++i) {
        const std::uint32_t ri = m_touched[i];
        for (const Member& m : m_resources[ri].members)
            if (m_group_mark[m.group] != m_generation && m_bottleneck[m.group] == ri) add_to_set(m.group);
    }
}

// A new generation with S the new flows and the changed resources touched.
void FlowSolver::start() {
    ++m_generation;
    m_set.clear();
    m_touched.clear();
    for (std::uint32_t r : m_dirty) touch(r);
    for (std::uint32_t id : m_new_groups)
        if (m_groups[id].active && m_group_mark[id] != m_generation) add_to_set(id);
}

// Everything connected to what S and the change touched: breadth first over the touched
// resources, which grow as flows join. Stops, returning false, once S holds more than `limit`
// flows.
bool FlowSolver::collect_component(std::size_t limit) {
    // Every flow of a touched resource is in the component: one with more flows than `limit`
    // decides the answer at once, without adding them (and touching all their resources) one by
    // one; first among the resources the change touched, then as the walk reaches more. Same
    // answer as the walk; the partial S of a false answer is dropped by the caller either way.
    for (std::uint32_t ri : m_touched)
        if (m_resources[ri].members.size() > limit) return false;
    for (std::size_t head = 0; head < m_touched.size(); ++head) {
        if (m_resources[m_touched[head]].members.size() > limit) return false;
        m_work += 1 + m_resources[m_touched[head]].members.size();
        for (const Member& m : m_resources[m_touched[head]].members)
            if (m_group_mark[m.group] != m_generation) {
                add_to_set(m.group);
                if (m_set.size() > limit) return false;
            }
    }
    return true;
}

// Progressive filling of S against what the flows outside S (held at their rates) leave of each
// resource. A resource's fill level, remaining / weights, is the common rate at which the unfrozen
// flows of S would fill it; a min-heap yields the next resource to fill in O(log) instead of a scan
// of all resources per round.
void FlowSolver::fill() {
    ++m_fills;
    m_order.clear();
    m_level.clear();
    std::size_t unfrozen = 0;
    for (std::uint32_t id : m_set) {
        Group& f = m_groups[id];
        f.frozen = f.size == 0;
        m_rate[id] = f.frozen ? kUnlimited : 0;
        m_bottleneck[id] = kNone;
        if (!f.frozen) ++unfrozen;
    }
    for (std::uint32_t ri : m_touched) {
        Resource& r = m_resources[ri];
        m_work += 1 + r.members.size();
        r.remaining = r.capacity;
        r.weights = 0;
        r.unfrozen = 0;
        for (const Member& m : r.members) {
            const double w = m.weight;
            if (m.first) {  // held at its flow's rate, or its estimate in S
                if (w > 0) r.remaining -= (m_group_mark[m.group] == m_generation ? m_estimate[m.group] : m_rate[m.group]) * w;
            } else if (m_group_mark[m.group] == m_generation) {
                r.weights += w;
                ++r.unfrozen;
            } else if (w > 0) {
                r.remaining -= m_rate[m.group] * w;
            }
        }
    }
    if (m_touched.size() <= m_scan_fill || m_touched.size() * unfrozen <= m_scan_work) fill_by_scan(unfrozen);
    else fill_by_heap(unfrozen);
    for (std::uint32_t id : m_set) {  // what is left uses only resources it puts no weight on
        Group& f = m_groups[id];
        double& rate = m_rate[id];
        if (!f.frozen) rate = kUnlimited;
        // A change within the tolerance is rounding: keep the rate the fabric has.
        if (f.old_rate > 0 && f.old_rate != kUnlimited && std::fabs(rate - f.old_rate) <= kTolerance * f.old_rate)
            rate = f.old_rate;
    }
}

// Freezes the unfrozen groups of S on resource `full` at `level` and takes their share from every
// resource they use; calls `changed(resource)` for each use it moves (a resource that several of
// the groups use, more than once).
template <class Changed>
void FlowSolver::freeze(std::uint32_t full, double level, std::size_t& unfrozen, Changed&& changed) {
    m_order.push_back(full);
    m_level.push_back(level);
    for (const Member& m : m_resources[full].members) {
        Group& f = m_groups[m.group];
        if (m.first || m_group_mark[m.group] != m_generation || f.frozen) continue;
        f.frozen = true;
        m_rate[m.group] = level;
        m_bottleneck[m.group] = full;
        --unfrozen;
        for (const Uses& u : uses(m.group)) {
            if (u.first) continue;  // its load is held at the estimate
            Resource& r = m_resources[u.resource];
            r.remaining -= level * u.total;
            if (--r.unfrozen == 0) r.weights = 0;  // exactly: no rounding residue left behind
            else r.weights -= u.total;
            changed(u.resource);
        }
    }
}

// The fill's steps with a heap of levels, queued lazily. A freeze at the lowest level never lowers
// another resource's level (what it takes from a resource is at most that resource's share at
// its own level), so an entry once queued stays a lower bound of its resource's level: an entry
// popped that is out of date goes back at the level now, and one that is up to date is the
// lowest (level, index) of all, as in fill_by_scan. A resource is queued again at once only when
// rounding does lower its level below its last entry. (Queuing every resource a freeze moved made a
// whole-component refill at 512 GPUs, some 2,000 groups, push about ten entries per group.)
void FlowSolver::fill_by_heap(std::size_t unfrozen) {
    // Built at once (linear) rather than entry by entry: (level, resource) orders the entries
    // totally, so the pops come in the same order either way.
    m_heap.clear();
    for (std::uint32_t ri : m_touched) {
        Resource& r = m_resources[ri];
        if (r.unfrozen == 0 || !(r.weights > 0)) continue;
        r.queued = level_of(r);
        m_heap.push_back(Entry{r.queued, ri});
    }
    std::make_heap(m_heap.begin(), m_heap.end(), LaterEntry{});
    double level = 0;
    while (unfrozen > 0 && !m_heap.empty()) {
        std::pop_heap(m_heap.begin(), m_heap.end(), LaterEntry{});
        const Entry e = m_heap.back();
        m_heap.pop_back();
        const Resource& full = m_resources[e.resource];
        if (full.unfrozen == 0 || !(full.weights > 0)) continue;  // nothing left to fill there
        const double at = level_of(full);
        if (at != e.level) {  // moved since: up, back in at its level now; down, a lower entry stands
            if (at > e.level) queue(e.resource, at);
            continue;
        }
        level = std::max(level, at);  // levels only rise; rounding must not lower one
        ++m_step;
        m_requeue.clear();
        freeze(e.resource, level, unfrozen, [&](std::uint32_t ri) {
            Resource& r = m_resources[ri];
            if (r.pushed != m_step) {
                r.pushed = m_step;
                m_requeue.push_back(ri);
            }
        });
        for (std::uint32_t ri : m_requeue) {
            const Resource& r = m_resources[ri];
            if (r.unfrozen == 0 || !(r.weights > 0)) continue;
            if (const double now = level_of(r); now < r.queued) queue(ri, now);
        }
    }
}

void FlowSolver::queue(std::uint32_t ri, double level) {
    m_resources[ri].queued = level;
    m_heap.push_back(Entry{level, ri});
    std::push_heap(m_heap.begin(), m_heap.end(), LaterEntry{});
}

// The same steps by a scan of the touched resources for the lowest (level, index) at each step:
// the level the heap would hold for each is the one computed from its record now, so the order
// of steps and every sum are the heap's, bit for bit. Most fills at scale are of a few dozen
// resources (38 on average at 512 GPUs), most of which every freeze moves: a scan of them per step
// costs about what the heap's re-queuing does, without its bookkeeping.
void FlowSolver::fill_by_scan(std::size_t unfrozen) {
    double level = 0;
    while (unfrozen > 0) {
        std::uint32_t next = kNone;
        double lowest = 0;
        for (std::uint32_t ri : m_touched) {
            const Resource& r = m_resources[ri];
            if (r.unfrozen == 0 || !(r.weights > 0)) continue;
            const double at = level_of(r);
            if (next == kNone || at < lowest || (at == lowest && ri < next)) {
                next = ri;
                lowest = at;
            }
        }
        if (next == kNone) break;
        level = std::max(level, lowest);  // levels only rise; rounding must not lower one
        freeze(next, level, unfrozen, [](std::uint32_t) {});
    }
}

// The load and the highest rate of every touched resource, with S's new rates.
void FlowSolver::measure() {
    for (std::uint32_t ri : m_touched) {
        Resource& r = m_resources[ri];
        m_work += 1 + r.members.size();
        double load = 0, top = 0, tagged = 0;
        for (const Member& m : r.members) {
            const double w = m.weight;
            const double rate = m_rate[m.group];
            if (w > 0) {
                load += rate * w;
                if (m.tagged) tagged += rate * w;
            }
            if (!m.first && rate != kUnlimited) top = std::max(top, rate);
        }
        m_measured[ri] = Measured{load, top, tagged};
    }
}

// Every flow of S, and every held flow whose bottleneck was touched, needs a bottleneck among its
// touched resources: full, and no flow there with a higher rate. A held flow without one joins S;
// an S flow without one is out-rated on the resource that froze it by held flows, which join S.
// Returns whether all passed (S unchanged); otherwise S has grown.
bool FlowSolver::check() {
    // A resource that served-first loads put over capacity is no flow's bottleneck.
    auto overloaded = [&](std::uint32_t ri) { return m_measured[ri].load > m_resources[ri].capacity * (1 + kOverload); };
    auto bottleneck = [&](std::uint32_t id) {
        const double rate = m_rate[id];
        if (rate == kUnlimited) return true;
        auto holds = [&](std::uint32_t ri) {
            const Measured& r = m_measured[ri];
            return m_resource_mark[ri] == m_generation && r.load >= m_resources[ri].capacity * (1 - kTolerance) &&
                   !overloaded(ri) && rate >= r.top * (1 - kTolerance);
        };
        std::uint32_t& neck = m_bottleneck[id];
        if (neck != kNone && holds(neck)) return true;
        for (const Uses& u : uses(id))
            if (!u.first && holds(u.resource)) {
                neck = u.resource;
                return true;
            }
        return false;
    };
    m_joining.clear();
    for (std::uint32_t id : m_set) {
        if (bottleneck(id) || m_bottleneck[id] == kNone) continue;
        for (const Member& m : m_resources[m_bottleneck[id]].members)
            if (!m.first && m_group_mark[m.group] != m_generation && m_rate[m.group] > m_rate[id] * (1 + kTolerance))
                m_joining.push_back(m.group);
    }
    for (std::uint32_t ri : m_touched) {
        // Served-first loads of S may have put a resource over capacity under held flows that it
        // does not bottleneck: they join, to be refilled against what those loads leave.
        const bool over = overloaded(ri);
        m_work += 1 + m_resources[ri].members.size();
        for (const Member& m : m_resources[ri].members) {
            if (m.first || m_group_mark[m.group] == m_generation) continue;
            if (over || (m_bottleneck[m.group] == ri && !bottleneck(m.group))) m_joining.push_back(m.group);
        }
    }
    for (std::uint32_t id : m_joining)
        if (m_group_mark[id] != m_generation) add_to_set(id);
    return m_joining.empty();
}

void FlowSolver::commit_loads() {
    for (std::uint32_t ri : m_touched) {
        m_load[ri] = m_measured[ri].load;
        m_tagged_load[ri] = m_measured[ri].tagged;
    }
}

}  // namespace eidola
