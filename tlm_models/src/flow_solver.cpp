#include "eidola/flow_solver.h"

#include <algorithm>
#include <stdexcept>

namespace eidola {

namespace {
// A resource within this fraction of its capacity is full: rounding in the subtractions must not
// leave a resource that is full in exact arithmetic a sliver open for another round.
constexpr double kFull = 1e-9;
}  // namespace

std::uint32_t FlowSolver::add_resource(double capacity) {
    if (!(capacity > 0)) throw std::invalid_argument("flow solver: a resource needs a positive capacity");
    m_resources.push_back(Resource{capacity});
    return std::uint32_t(m_resources.size() - 1);
}

void FlowSolver::add_flow(std::uint32_t id, const std::vector<Use>& uses) {
    if (id >= m_flows.size()) m_flows.resize(std::size_t(id) + 1);
    Flow& f = m_flows[id];
    if (f.active) throw std::logic_error("flow solver: flow added twice");
    f.active = true;
    f.rate = f.old_rate = 0;
    f.uses.clear();
    for (const Use& u : uses) {
        Resource& r = m_resources[u.resource];
        f.uses.push_back(Uses{u.resource, u.weight, std::uint32_t(r.flows.size())});
        r.flows.push_back(Member{id, std::uint32_t(f.uses.size() - 1)});
        m_dirty.push_back(u.resource);
    }
    if (uses.empty()) m_new_flows.push_back(id);
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
}

// The resources and flows connected to a changed resource, breadth first from each in the order
// they changed (a deterministic order: the fabric's calls come in simulation order).
void FlowSolver::collect_components() {
    ++m_generation;
    m_comp_resources.clear();
    m_comp_flows.clear();
    for (std::uint32_t start : m_dirty) {
        if (m_resources[start].mark == m_generation) continue;
        m_resources[start].mark = m_generation;
        std::size_t head = m_comp_resources.size();
        m_comp_resources.push_back(start);
        while (head < m_comp_resources.size()) {
            const Resource& r = m_resources[m_comp_resources[head++]];
            for (const Member& m : r.flows) {
                Flow& f = m_flows[m.flow];
                if (f.mark == m_generation) continue;
                f.mark = m_generation;
                m_comp_flows.push_back(m.flow);
                for (const Uses& u : f.uses) {
                    Resource& next = m_resources[u.resource];
                    if (next.mark == m_generation) continue;
                    next.mark = m_generation;
                    m_comp_resources.push_back(u.resource);
                }
            }
        }
    }
    for (std::uint32_t id : m_new_flows)
        if (m_flows[id].active && m_flows[id].mark != m_generation) {
            m_flows[id].mark = m_generation;
            m_comp_flows.push_back(id);
        }
    m_dirty.clear();
    m_new_flows.clear();
}

void FlowSolver::fill() {
    std::size_t unfrozen = 0;
    for (std::uint32_t id : m_comp_flows) {
        Flow& f = m_flows[id];
        f.old_rate = f.rate;
        f.frozen = f.uses.empty();
        f.rate = f.frozen ? kUnlimited : 0;
        if (!f.frozen) ++unfrozen;
    }
    for (std::uint32_t ri : m_comp_resources) {
        Resource& r = m_resources[ri];
        r.remaining = r.capacity;
        r.weights = 0;
        r.unfrozen = 0;
        for (const Member& m : r.flows) {
            r.weights += m_flows[m.flow].uses[m.use].weight;
            ++r.unfrozen;
        }
    }
    double level = 0;
    auto freeze = [&](std::uint32_t id, double rate) {
        Flow& f = m_flows[id];
        f.frozen = true;
        f.rate = rate;
        --unfrozen;
        for (const Uses& u : f.uses) {
            Resource& r = m_resources[u.resource];
            if (--r.unfrozen == 0) r.weights = 0;  // exactly: no rounding residue left behind
            else r.weights -= u.weight;
        }
    };
    while (unfrozen > 0) {
        ++m_rounds;
        double delta = kUnlimited;
        std::uint32_t first = 0;
        for (std::uint32_t ri : m_comp_resources) {
            const Resource& r = m_resources[ri];
            if (r.unfrozen == 0 || !(r.weights > 0)) continue;
            const double d = std::max(0.0, r.remaining) / r.weights;
            if (d < delta) {
                delta = d;
                first = ri;
            }
        }
        if (delta == kUnlimited) {  // what is left uses only resources it puts no weight on
            for (std::uint32_t id : m_comp_flows)
                if (!m_flows[id].frozen) freeze(id, kUnlimited);
            break;
        }
        level += delta;
        for (std::uint32_t ri : m_comp_resources) {
            Resource& r = m_resources[ri];
            if (r.unfrozen) r.remaining -= delta * r.weights;
        }
        for (std::uint32_t ri : m_comp_resources) {
            Resource& r = m_resources[ri];
            if (r.unfrozen == 0 || !(r.weights > 0)) continue;
            if (ri != first && r.remaining > kFull * r.capacity) continue;
            for (const Member& m : r.flows)
                if (!m_flows[m.flow].frozen) freeze(m.flow, level);
        }
    }
    for (std::uint32_t ri : m_comp_resources) {
        Resource& r = m_resources[ri];
        double load = 0;
        for (const Member& m : r.flows) load += m_flows[m.flow].rate * m_flows[m.flow].uses[m.use].weight;
        r.load = load;
    }
}

}  // namespace eidola
