// Weighted max-min fair rates of flows over shared resources, by progressive filling (the
// solver of flow-level network simulators such as SimGrid's and flowSim's).
//
// A resource has a capacity; a flow uses some resources, each with a weight: at rate r it takes
// r x weight of that resource. For the flow fabric a rate is payload bytes per second, a link's
// capacity is its bytes per second over all lanes and a flow's weight on it is the wire bytes it
// puts there per payload byte (headers, acknowledgements, its share of spread paths); a GPU's
// window is a resource of `max_outstanding` packets and a flow's weight on it is the time one of
// its packets holds a slot per payload byte.
//
// Progressive filling: every unfrozen flow's rate grows at the same pace; the first resources to
// fill freeze the flows through them at that rate; the rest go on. The result is the unique
// weighted max-min fair allocation. Max-min fairness splits over connected components of the
// flow-resource graph, so solve() recomputes only the components that flows joined or left since
// the last call: a flow that starts between two GPUs of a switch does not touch the rates of
// flows elsewhere. Everything runs in a fixed order (resource and flow indices, insertion order),
// so the same sequence of calls gives bit-identical rates.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace eidola {

/// Rates of flows over resources, recomputed where flows came or went.
class FlowSolver {
public:
    /// One resource a flow uses, with its weight (resource units per unit of the flow's rate).
    struct Use {
        std::uint32_t resource;
        double weight;
    };
    static constexpr double kUnlimited = std::numeric_limits<double>::infinity();

    /// Adds a resource of `capacity` units per second (> 0); returns its index.
    std::uint32_t add_resource(double capacity);
    /// Starts flow `id` (any index; storage grows to it) over `uses`, each resource at most once.
    /// A flow with no uses has an unlimited rate.
    void add_flow(std::uint32_t id, const std::vector<Use>& uses);
    /// Ends flow `id`.
    void remove_flow(std::uint32_t id);
    /// The current rate of flow `id` (as of the last solve()).
    double rate(std::uint32_t id) const { return m_flows[id].rate; }
    /// The current load of `resource`: the sum of rate x weight of its flows.
    double load(std::uint32_t resource) const { return m_resources[resource].load; }
    /// The capacity of `resource`.
    double capacity(std::uint32_t resource) const { return m_resources[resource].capacity; }
    /// Resources added so far.
    std::uint32_t resources() const { return std::uint32_t(m_resources.size()); }
    /// Whether flows came or went since the last solve().
    bool dirty() const { return !m_dirty.empty(); }

    /// Recomputes the rates in every component that changed. Calls `before(resource)` for each
    /// resource of those components before its load changes, then `changed(flow)` for each flow
    /// whose rate changed (new flows included), in a fixed order.
    template <class Before, class Changed>
    void solve(Before&& before, Changed&& changed) {
        collect_components();
        for (std::uint32_t r : m_comp_resources) before(r);
        fill();
        for (std::uint32_t f : m_comp_flows)
            if (m_flows[f].rate != m_flows[f].old_rate) changed(f);
    }

    /// Progressive-filling rounds run so far (a measure of the solver's work).
    std::uint64_t rounds() const { return m_rounds; }

private:
    struct Member {
        std::uint32_t flow;
        std::uint32_t use;  // index into the flow's uses
    };
    struct Resource {
        double capacity;
        double load = 0;
        std::vector<Member> flows;
        // scratch of one solve
        double remaining = 0, weights = 0;
        std::uint32_t unfrozen = 0;
        std::uint32_t mark = 0;  // solve generation that visited it
    };
    struct Uses {
        std::uint32_t resource;
        double weight;
        std::uint32_t position;  // this flow's place in the resource's member list
    };
    struct Flow {
        std::vector<Uses> uses;
        double rate = 0, old_rate = 0;
        bool active = false, frozen = false;
        std::uint32_t mark = 0;
    };

    void collect_components();
    void fill();

    std::vector<Resource> m_resources;
    std::vector<Flow> m_flows;
    std::vector<std::uint32_t> m_dirty;                 // resources whose flows changed, and new flows' marks
    std::vector<std::uint32_t> m_new_flows;             // flows added with no resource
    std::vector<std::uint32_t> m_comp_resources, m_comp_flows;
    std::uint32_t m_generation = 0;
    std::uint64_t m_rounds = 0;
};

}  // namespace eidola
