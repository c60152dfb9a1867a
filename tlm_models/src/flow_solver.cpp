#include "eidola/flow_solver.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

namespace eidola {

namespace {
// The heap of fill levels is a min-heap on (level, resource): ties go to the lower index, so the
// order of a fill does not depend on the order in which levels were queued.
bool later(double level_a, std::uint32_t res_a, double level_b, std::uint32_t res_b) {
    return level_a > level_b || (level_a == level_b && res_a > res_b);
}
// The refilled set grows past this share of the flows (plus a floor for small fabrics): refilling
// the component at once is then cheaper than growing the set step by step.
constexpr std::size_t kSetFloor = 64;
constexpr std::size_t kSetShare = 4;   // a quarter of the active flows
constexpr int kMaxSteps = 32;          // refills of a growing set before falling back
constexpr std::size_t kUnbounded = std::numeric_limits<std::size_t>::max();
}  // namespace

std::uint32_t FlowSolver::add_resource(double capacity) {
    if (!(capacity > 0)) throw std::invalid_argument("flow solver: a resource needs a positive capacity");
    m_resources.push_back(Resource{capacity});
    m_resource_mark.push_back(0);
    return std::uint32_t(m_resources.size() - 1);
}

void FlowSolver::add_flow(std::uint32_t id, const std::vector<Use>& uses) {
    if (id >= m_flows.size()) {
        m_flows.resize(std::size_t(id) + 1);
        m_flow_mark.resize(m_flows.size(), 0);
    }
    Flow& f = m_flows[id];
    if (f.active) throw std::logic_error("flow solver: flow added twice");
    f.active = true;
    f.rate = f.old_rate = 0;
    f.bottleneck = kNone;
    f.uses.clear();
    for (const Use& u : uses) {
        Resource& r = m_resources[u.resource];
        f.uses.push_back(Uses{u.resource, u.weight, std::uint32_t(r.flows.size())});
        r.flows.push_back(Member{id, std::uint32_t(f.uses.size() - 1), u.weight});
    }
    m_new_flows.push_back(id);
    ++m_active;
}

void FlowSolver::remove_flow(std::uint32_t id) {
    Flow& f = m_flows[id];
    if (!f.active) throw std::logic_error("flow solver: removing a flow that is not there");
    f.active = false;
    for (const Uses& u : f.uses) {
        Resource& r = m_resources[u.resource];
        const Member moved = r.flows.back();
        r.flows[u.position] = moved;
        m_flows[moved.flow].uses[moved.use].position = u.position;
        r.flows.pop_back();
        m_dirty.push_back(u.resource);
    }
    f.uses.clear();
    f.rate = 0;
    --m_active;
}

void FlowSolver::touch(std::uint32_t resource) {
    Resource& r = m_resources[resource];
    std::uint32_t& mark = m_resource_mark[resource];
    if (mark == m_generation) return;
    mark = m_generation;
    m_touched.push_back(resource);
}

void FlowSolver::add_to_set(std::uint32_t id) {
    Flow& f = m_flows[id];
    m_flow_mark[id] = m_generation;
    f.old_rate = f.rate;
    m_set.push_back(id);
    for (const Uses& u : f.uses) touch(u.resource);
}

// S starts as the new flows, with the resources that lost or gained a flow touched; then refill
// and check until the check passes, or refill the component. The order of everything follows the
// order of the calls since the last solve, so it is deterministic.
void FlowSolver::compute() {
    ++m_solves;
    start();
    // A small component is cheaper to refill at once than to refill and check in steps (and a
    // fabric of a few GPUs is mostly small components): look for its end first, a few flows deep.
    const bool small = m_small_component > 0 && collect_component(m_small_component);
    if (!small) start();
    m_dirty.clear();
    m_new_flows.clear();
    if (small) {
        fill();
        measure();
        return;
    }
    if (m_incremental && m_skip > 0) {
        --m_skip;
    } else if (m_incremental) {
        for (int step = 0; step < kMaxSteps; ++step) {
            fill();
            measure();
            const std::size_t before = m_set.size();
            if (check()) {
                m_backoff = 1;
                return;
            }
            if (m_set.size() == before || m_set.size() > kSetFloor + m_active / kSetShare) break;
        }
        if (m_backoff_on) {  // the attempt was wasted: refill whole for a while before the next
            m_skip = m_backoff;
            m_backoff = std::min(2 * m_backoff, kMaxBackoff);
        }
    }
    ++m_full_solves;
    collect_component(kUnbounded);
    fill();
    measure();
}

// A new generation with S the new flows and the changed resources touched.
void FlowSolver::start() {
    ++m_generation;
    m_set.clear();
    m_touched.clear();
    for (std::uint32_t r : m_dirty) touch(r);
    for (std::uint32_t id : m_new_flows)
        if (m_flows[id].active && m_flow_mark[id] != m_generation) add_to_set(id);
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
        if (m_resources[ri].flows.size() > limit) return false;
    for (std::size_t head = 0; head < m_touched.size(); ++head) {
        if (m_resources[m_touched[head]].flows.size() > limit) return false;
        for (const Member& m : m_resources[m_touched[head]].flows)
            if (m_flow_mark[m.flow] != m_generation) {
                add_to_set(m.flow);
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
    m_refilled += m_set.size();
    std::size_t unfrozen = 0;
    for (std::uint32_t id : m_set) {
        Flow& f = m_flows[id];
        f.frozen = f.uses.empty();
        f.rate = f.frozen ? kUnlimited : 0;
        f.bottleneck = kNone;
        if (!f.frozen) ++unfrozen;
    }
    m_heap.clear();
    auto queue = [&](std::uint32_t ri) {
        Resource& r = m_resources[ri];
        ++r.version;
        if (r.unfrozen == 0 || !(r.weights > 0)) return;
        m_heap.push_back(Entry{std::max(0.0, r.remaining) / r.weights, ri, r.version});
        std::push_heap(m_heap.begin(), m_heap.end(),
                       [](const Entry& a, const Entry& b) { return later(a.level, a.resource, b.level, b.resource); });
    };
    for (std::uint32_t ri : m_touched) {
        Resource& r = m_resources[ri];
        r.remaining = r.capacity;
        r.weights = 0;
        r.unfrozen = 0;
        for (const Member& m : r.flows) {
            const Flow& f = m_flows[m.flow];
            const double w = m.weight;
            if (m_flow_mark[m.flow] == m_generation) {
                r.weights += w;
                ++r.unfrozen;
            } else if (w > 0) {
                r.remaining -= f.rate * w;
            }
        }
        queue(ri);
    }
    double level = 0;
    while (unfrozen > 0 && !m_heap.empty()) {
        std::pop_heap(m_heap.begin(), m_heap.end(),
                      [](const Entry& a, const Entry& b) { return later(a.level, a.resource, b.level, b.resource); });
        const Entry e = m_heap.back();
        m_heap.pop_back();
        Resource& full = m_resources[e.resource];
        if (e.version != full.version || full.unfrozen == 0) continue;  // superseded
        level = std::max(level, e.level);  // levels only rise; rounding must not lower one
        ++m_step;
        m_requeue.clear();
        for (const Member& m : full.flows) {
            Flow& f = m_flows[m.flow];
            if (m_flow_mark[m.flow] != m_generation || f.frozen) continue;
            f.frozen = true;
            f.rate = level;
            f.bottleneck = e.resource;
            --unfrozen;
            for (const Uses& u : f.uses) {
                Resource& r = m_resources[u.resource];
                r.remaining -= level * u.weight;
                if (--r.unfrozen == 0) r.weights = 0;  // exactly: no rounding residue left behind
                else r.weights -= u.weight;
                if (r.pushed != m_step) {
                    r.pushed = m_step;
                    m_requeue.push_back(u.resource);
                }
            }
        }
        for (std::uint32_t ri : m_requeue) queue(ri);
    }
    for (std::uint32_t id : m_set) {  // what is left uses only resources it puts no weight on
        Flow& f = m_flows[id];
        if (!f.frozen) f.rate = kUnlimited;
        // A change within the tolerance is rounding: keep the rate the fabric has.
        if (f.old_rate > 0 && f.old_rate != kUnlimited && std::fabs(f.rate - f.old_rate) <= kTolerance * f.old_rate)
            f.rate = f.old_rate;
    }
}

// The load and the highest rate of every touched resource, with S's new rates.
void FlowSolver::measure() {
    for (std::uint32_t ri : m_touched) {
        Resource& r = m_resources[ri];
        double load = 0, top = 0;
        for (const Member& m : r.flows) {
            const Flow& f = m_flows[m.flow];
            const double w = m.weight;
            if (w > 0) load += f.rate * w;
            if (f.rate != kUnlimited) top = std::max(top, f.rate);
        }
        r.new_load = load;
        r.top = top;
    }
}

// Every flow of S, and every held flow whose bottleneck was touched, needs a bottleneck among its
// touched resources: full, and no flow there with a higher rate. A held flow without one joins S;
// an S flow without one is out-rated on the resource that froze it by held flows, which join S.
// Returns whether all passed (S unchanged); otherwise S has grown.
bool FlowSolver::check() {
    auto bottleneck = [&](Flow& f) {
        if (f.rate == kUnlimited) return true;
        auto holds = [&](std::uint32_t ri) {
            const Resource& r = m_resources[ri];
            return m_resource_mark[ri] == m_generation && r.new_load >= r.capacity * (1 - kTolerance) &&
                   f.rate >= r.top * (1 - kTolerance);
        };
        if (f.bottleneck != kNone && holds(f.bottleneck)) return true;
        for (const Uses& u : f.uses)
            if (holds(u.resource)) {
                f.bottleneck = u.resource;
                return true;
            }
        return false;
    };
    m_joining.clear();
    for (std::uint32_t id : m_set) {
        Flow& f = m_flows[id];
        if (bottleneck(f) || f.bottleneck == kNone) continue;
        for (const Member& m : m_resources[f.bottleneck].flows) {
            const Flow& g = m_flows[m.flow];
            if (m_flow_mark[m.flow] != m_generation && g.rate > f.rate * (1 + kTolerance)) m_joining.push_back(m.flow);
        }
    }
    for (std::uint32_t ri : m_touched)
        for (const Member& m : m_resources[ri].flows) {
            Flow& g = m_flows[m.flow];
            if (m_flow_mark[m.flow] != m_generation && g.bottleneck == ri && !bottleneck(g)) m_joining.push_back(m.flow);
        }
    for (std::uint32_t id : m_joining)
        if (m_flow_mark[id] != m_generation) add_to_set(id);
    return m_joining.empty();
}

void FlowSolver::commit_loads() {
    for (std::uint32_t ri : m_touched) m_resources[ri].load = m_resources[ri].new_load;
}

}  // namespace eidola
