// FlowSolver against weighted max-min fair allocations worked out by hand, and its incremental
// recomputation against solving everything afresh. No SystemC: the solver is plain arithmetic.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "eidola/flow_solver.h"

using eidola::FlowSolver;

namespace {

int failures = 0;

void expect(const char* what, double got, double want) {
    if (std::fabs(got - want) > 1e-9 * std::max(1.0, std::fabs(want))) {
        std::printf("FAIL %s: got %.12g, want %.12g\n", what, got, want);
        ++failures;
    }
}

void solve(FlowSolver& s) {
    s.solve([](std::uint32_t) {}, [](std::uint32_t) {});
}

using Templates = std::vector<std::vector<FlowSolver::Use>>;

// A flow of a switch in miniature (resource 2g: GPU g's up link, 2g + 1: its down link), at random:
// weight about 1 on its source's up and its destination's down link, and an acknowledgement weight
// of 0, 1/16 or 1/8 on the reverse links (served first if `first`).
std::vector<FlowSolver::Use> random_switch_flow(std::mt19937_64& rng, int gpus, bool first = false) {
    const std::uint32_t src = std::uint32_t(rng() % gpus), dst = (src + 1 + std::uint32_t(rng() % (gpus - 1))) % gpus;
    const double ack = double(rng() % 3) / 16;
    std::vector<FlowSolver::Use> uses{{2 * src, 1.0 + double(rng() % 4) / 64}, {2 * dst + 1, 1.0}};
    if (ack > 0) uses.insert(uses.end(), {{2 * dst, ack, first}, {2 * src + 1, ack, first}});
    return uses;
}

// The links of random_switch_flow's switch (2 per GPU), each of 50 to 149 units at random, added in
// the same order to every solver given; returns their capacities.
std::vector<double> random_switch_links(std::mt19937_64& rng, int gpus, std::initializer_list<FlowSolver*> solvers) {
    std::vector<double> cap;
    for (int r = 0; r < 2 * gpus; ++r) {
        cap.push_back(50 + double(rng() % 100));
        for (FlowSolver* s : solvers) s->add_resource(cap.back());
    }
    return cap;
}

// One random step: 1 to 4 of the flow ids (one per entry of tmpl: its template, -1 when absent) come or go.
// `coupled`: each flow is coupled to the others whose first use is the same resource (random_switch_flow's: the
// flows of one source, as the flow fabric couples a GPU's writes through one output).
void toggle_flows(FlowSolver& s, std::mt19937_64& rng, const Templates& templates, std::vector<int>& tmpl,
                  bool coupled = false) {
    for (int k = 1 + int(rng() % 4); k > 0; --k) {
        const std::uint32_t f = std::uint32_t(rng() % tmpl.size());
        if (tmpl[f] >= 0) {
            s.remove_flow(f);
            tmpl[f] = -1;
        } else {
            tmpl[f] = int(rng() % templates.size());
            const std::vector<FlowSolver::Use>& uses = templates[std::size_t(tmpl[f])];
            if (coupled) s.add_coupled_flow(f, uses, false, 1 + uses.front().resource);
            else s.add_flow(f, uses);
        }
    }
}

// The solver's rates checked against the definition of max-min fairness: no resource over its
// capacity, and every flow has a bottleneck (a full resource where no flow has a higher rate),
// among the resources it does not use served first, whose served-first users do not count for it.
// Returns each resource's load, summed here from the rates.
std::vector<double> check_max_min(const FlowSolver& s, const Templates& templates, const std::vector<int>& tmpl,
                                  const std::vector<double>& cap, const char* what, std::uint64_t seed, int step) {
    std::vector<double> load(cap.size(), 0.0), top(cap.size(), 0.0);
    for (std::uint32_t f = 0; f < tmpl.size(); ++f)
        if (tmpl[f] >= 0)
            for (const FlowSolver::Use& u : templates[std::size_t(tmpl[f])]) {
                load[u.resource] += s.rate(f) * u.weight;
                if (!u.first) top[u.resource] = std::max(top[u.resource], s.rate(f));
            }
    for (std::uint32_t f = 0; f < tmpl.size(); ++f) {
        if (tmpl[f] < 0) continue;
        bool bottleneck = false;
        for (const FlowSolver::Use& u : templates[std::size_t(tmpl[f])])
            bottleneck |= !u.first && load[u.resource] >= cap[u.resource] * (1 - 1e-8) && s.rate(f) >= top[u.resource] * (1 - 1e-8);
        if (!bottleneck) {
            std::printf("FAIL %s, seed %llu step %d: flow %u has no bottleneck\n", what, (unsigned long long)seed, step, f);
            ++failures;
        }
    }
    for (std::size_t r = 0; r < cap.size(); ++r)
        if (load[r] > cap[r] * (1 + 1e-8)) {
            std::printf("FAIL %s, seed %llu step %d: resource %zu over capacity\n", what, (unsigned long long)seed, step, r);
            ++failures;
        }
    return load;
}

// A flow over a random subset of `resources` resources (each with a chance of 1 in 4), weights 0.5 to 2.25.
std::vector<FlowSolver::Use> random_uses(std::mt19937_64& rng, int resources) {
    std::vector<FlowSolver::Use> uses;
    for (int r = 0; r < resources; ++r)
        if (rng() % 4 == 0) uses.push_back({std::uint32_t(r), 0.5 + double(rng() % 8) / 4});
    return uses;
}

// A fresh solver with capacities `cap` and the `active` flows of `uses`, solved: the reference for incremental ones.
std::unique_ptr<FlowSolver> solved_afresh(const std::vector<double>& cap,
                                          const std::vector<std::vector<FlowSolver::Use>>& uses,
                                          const std::vector<bool>& active) {
    auto fresh = std::make_unique<FlowSolver>();
    for (double c : cap) fresh->add_resource(c);
    for (std::uint32_t g = 0; g < uses.size(); ++g)
        if (active[g]) fresh->add_flow(g, uses[g]);
    solve(*fresh);
    return fresh;
}

}  // namespace

int main() {
    {
        // Two links of 10 and 4. Flow 0 crosses both, flow 1 only the first, flow 2 only the
        // second. Link 1 (4) fills first: flows 0 and 2 get 2 each; flow 1 takes what link 0 has
        // left, 10 - 2 = 8.
        FlowSolver s;
        const auto a = s.add_resource(10), b = s.add_resource(4);
        s.add_flow(0, {{a, 1}, {b, 1}});
        s.add_flow(1, {{a, 1}});
        s.add_flow(2, {{b, 1}});
        solve(s);
        expect("crossing flow", s.rate(0), 2);
        expect("flow on the wide link", s.rate(1), 8);
        expect("flow on the narrow link", s.rate(2), 2);
        expect("load of the wide link", s.load(a), 10);
        // Flow 2 leaves: flow 0 is then held by link 0 with flow 1, 5 each (link 1 has room for 4).
        s.remove_flow(2);
        solve(s);
        expect("after leaving, crossing flow", s.rate(0), 4);
        expect("after leaving, other flow", s.rate(1), 6);
    }
    {
        // Weights: on a link of 12, a flow of weight 2 (two wire bytes per payload byte) and one of
        // weight 1 reach the same rate r with 2r + r = 12: r = 4 each.
        FlowSolver s;
        const auto a = s.add_resource(12);
        s.add_flow(0, {{a, 2}});
        s.add_flow(1, {{a, 1}});
        solve(s);
        expect("weighted flow", s.rate(0), 4);
        expect("unweighted flow", s.rate(1), 4);
    }
    {
        // Tagged flows (the flow fabric's queued writes): the same rates as untagged ones, their load also counted
        // apart. On a link of 12 with a second link of 4 behind it: flows 0 and 1 identical but for the tag (two
        // groups, not one), flow 2 tagged over both links. Link 1 holds flow 2 at 4; flows 0 and 1 share the 8 left,
        // 4 each: the tagged load of link 0 is 4 + 4, of link 1 all 4. Flow 1 leaving gives flow 0 the 8.
        FlowSolver s;
        const auto a = s.add_resource(12), b = s.add_resource(4);
        s.add_flow(0, {{a, 1}});
        s.add_flow(1, {{a, 1}}, true);
        s.add_flow(2, {{a, 1}, {b, 1}}, true);
        solve(s);
        expect("untagged flow", s.rate(0), 4);
        expect("its tagged twin", s.rate(1), 4);
        expect("tagged flow held by the narrow link", s.rate(2), 4);
        expect("load of link 0", s.load(a), 12);
        expect("tagged load of link 0", s.tagged_load(a), 8);
        expect("tagged load of link 1", s.tagged_load(b), 4);
        expect("two groups for the twins and one more", double(s.groups()), 3);
        s.remove_flow(1);
        solve(s);
        expect("after the tagged twin left, untagged flow", s.rate(0), 8);
        expect("tagged load of link 0 after it left", s.tagged_load(a), 4);
    }
    {
        // Coupled flows (one GPU's injection queue): one rate for all, as one flow over the sum of their uses. A
        // link of 10 that flows 0, 1 (coupled) and 2 cross, and a link of 4 that flow 0 alone crosses beyond it.
        // Uncoupled, flow 0 would get 4 and flows 1 and 2 3 each; coupled, flows 0 and 1 go at r with 2r + r2 = 10
        // and r <= 4: the wide link fills first, at r = r2 = 10 / 3. With flow 2 gone they take the wide link's
        // 10 / 2 = 5 each, but flow 0 holds at 4 and holds flow 1 with it, where uncoupled flow 1 would take 6.
        // With flow 0 gone, flow 1 alone takes the 10.
        FlowSolver s;
        const auto a = s.add_resource(10), b = s.add_resource(4);
        s.add_coupled_flow(0, {{a, 1}, {b, 1}}, false, 7);
        s.add_coupled_flow(1, {{a, 1}}, false, 7);
        s.add_flow(2, {{a, 1}});
        solve(s);
        expect("coupled flow over both links", s.rate(0), 10.0 / 3);
        expect("coupled flow over the wide link", s.rate(1), 10.0 / 3);
        expect("uncoupled flow", s.rate(2), 10.0 / 3);
        expect("one group for the coupled flows", double(s.groups()), 2);
        s.remove_flow(2);
        solve(s);
        expect("held by the narrow link", s.rate(0), 4);
        expect("held with it", s.rate(1), 4);
        expect("load of the wide link", s.load(a), 8);
        s.remove_flow(0);
        solve(s);
        expect("the coupled flow left alone", s.rate(1), 10);
        expect("load of the narrow link after", s.load(b), 0);
        // A flow added uncoupled with the same uses as the coupled one does not join its group.
        s.add_flow(3, {{a, 1}});
        solve(s);
        expect("uncoupled twin", s.rate(3), 5);
        expect("two groups", double(s.groups()), 2);
    }
    {
        // Separate components: changing one leaves the other's rates as they were, and a flow
        // with no resource is unlimited.
        FlowSolver s;
        const auto a = s.add_resource(6), b = s.add_resource(9);
        s.add_flow(0, {{a, 1}});
        s.add_flow(1, {{b, 1}});
        s.add_flow(2, {});
        solve(s);
        int changed = 0;
        s.add_flow(3, {{a, 1}});
        s.solve([](std::uint32_t) {}, [&](std::uint32_t f) { changed += f == 1 ? 100 : 1; });
        expect("shared link", s.rate(0), 3);
        expect("new flow", s.rate(3), 3);
        expect("other component", s.rate(1), 9);
        expect("unlimited", s.rate(2) == FlowSolver::kUnlimited ? 1 : 0, 1);
        expect("flows reported changed (0 and 3, not 1)", changed, 2);
    }
    {
        // The incremental path (issue 25): a flow leaving frees capacity to exactly the flows whose
        // bottleneck it shared. Links L0 and L1 of 10, and a lightly used resource A of 100 that
        // couples all four flows (as acknowledgements couple the flows of a switch) at weight 0.1.
        // L0 holds flows 0 and 1 at 5 each, L1 flows 2 and 3 at 5 each; A carries 4 x 0.5 = 2.
        FlowSolver s;
        s.set_small_component(0);  // these components are small: take the incremental path all the same
        const auto l0 = s.add_resource(10), l1 = s.add_resource(10), a = s.add_resource(100);
        s.add_flow(0, {{l0, 1}, {a, 0.1}});
        s.add_flow(1, {{l0, 1}, {a, 0.1}});
        s.add_flow(2, {{l1, 1}, {a, 0.1}});
        s.add_flow(3, {{l1, 1}, {a, 0.1}});
        solve(s);
        for (std::uint32_t f = 0; f < 4; ++f) expect("four flows, two per link", s.rate(f), 5);
        expect("load of A", s.load(a), 2);
        // Flow 0 leaves: flow 1 has L0 to itself, 10; flows 2 and 3 keep 5 and are not reported.
        s.remove_flow(0);
        std::vector<std::uint32_t> changed;
        s.solve([](std::uint32_t) {}, [&](std::uint32_t f) { changed.push_back(f); });
        expect("flow 1 alone on L0", s.rate(1), 10);
        expect("flow 2 elsewhere", s.rate(2), 5);
        expect("flow 3 elsewhere", s.rate(3), 5);
        expect("load of A after", s.load(a), 10 * 0.1 + 2 * 5 * 0.1);
        expect("only flow 1 reported", double(changed.size()), 1);
        expect("the reported flow is 1", changed.empty() ? -1 : changed[0], 1);
        // Flow 4 joins L1: 10 / 3 each for flows 2, 3 and 4; flow 1 keeps 10, unreported.
        s.add_flow(4, {{l1, 1}, {a, 0.1}});
        changed.clear();
        s.solve([](std::uint32_t) {}, [&](std::uint32_t f) { changed.push_back(f); });
        for (std::uint32_t f = 2; f <= 4; ++f) expect("three flows on L1", s.rate(f), 10.0 / 3);
        expect("flow 1 untouched", s.rate(1), 10);
        expect("reported: flows 2, 3 and 4", double(changed.size()), 3);
        expect("no fallback to a whole component", double(s.full_solves()), 0);
    }
    {
        // A change that moves flows two hops away. X of 12 holds g0 and g1, Y of 9 holds g1 and g2.
        // Y fills first, at 4.5 (g1, g2); g0 takes what X has left, 12 - 4.5 = 7.5. When g2
        // leaves, g1 is held by X only and shares it with g0: 6 each, so g0, which shared no
        // resource with g2, drops from 7.5 to 6.
        FlowSolver s;
        s.set_small_component(0);
        const auto x = s.add_resource(12), y = s.add_resource(9);
        s.add_flow(0, {{x, 1}});
        s.add_flow(1, {{x, 1}, {y, 1}});
        s.add_flow(2, {{y, 1}});
        solve(s);
        expect("g0 before", s.rate(0), 7.5);
        expect("g1 before", s.rate(1), 4.5);
        expect("g2 before", s.rate(2), 4.5);
        s.remove_flow(2);
        solve(s);
        expect("g0 after", s.rate(0), 6);
        expect("g1 after", s.rate(1), 6);
        expect("load of Y after", s.load(y), 6);
        expect("no fallback to a whole component", double(s.full_solves()), 0);
    }
    {
        // A switch in miniature, randomised: GPUs with an up and a down link of random capacity;
        // a flow from s to d takes weight 1 on s's up and d's down link and an acknowledgement
        // weight on d's up and s's down link, so one component couples every flow. Flows come and
        // go at random; after each solve the incremental rates equal a whole-component refill of
        // the same flows, and most solves never fell back to one.
        for (std::uint64_t seed = 1; seed <= 20; ++seed) {
            std::mt19937_64 rng(seed);
            const int gpus = 4 + int(rng() % 29);
            FlowSolver inc, full, dflt;  // dflt: as the fabric runs it (small components whole, back-off)
            inc.set_small_component(0);
            inc.set_backoff(false);
            full.set_incremental(false);
            full.set_small_component(0);
            const std::vector<double> cap = random_switch_links(rng, gpus, {&inc, &full, &dflt});
            const std::uint32_t kFlows = 6 * std::uint32_t(gpus);
            std::vector<std::vector<FlowSolver::Use>> uses(kFlows);
            std::vector<bool> active(kFlows, false);
            for (int step = 0; step < 600; ++step) {
                for (int k = 1 + int(rng() % 3); k > 0; --k) {  // same-time changes, solved once
                    const std::uint32_t f = std::uint32_t(rng() % kFlows);
                    if (active[f]) {
                        inc.remove_flow(f);
                        full.remove_flow(f);
                        dflt.remove_flow(f);
                    } else {
                        uses[f] = random_switch_flow(rng, gpus);
                        inc.add_flow(f, uses[f]);
                        full.add_flow(f, uses[f]);
                        dflt.add_flow(f, uses[f]);
                    }
                    active[f] = !active[f];
                }
                solve(inc);
                solve(full);
                solve(dflt);
                for (std::uint32_t g = 0; g < kFlows; ++g)
                    for (const FlowSolver* s : {&inc, &dflt})
                        if (active[g] && std::fabs(s->rate(g) - full.rate(g)) > 1e-8 * full.rate(g)) {
                            std::printf("FAIL seed %llu step %d flow %u: %s %.12g, whole component %.12g\n",
                                        (unsigned long long)seed, step, g, s == &inc ? "incremental" : "default",
                                        s->rate(g), full.rate(g));
                            ++failures;
                        }
                for (int r = 0; r < 2 * gpus; ++r)
                    if (inc.load(std::uint32_t(r)) > cap[std::size_t(r)] * (1 + 1e-8)) {
                        std::printf("FAIL seed %llu: resource %d over capacity\n", (unsigned long long)seed, r);
                        ++failures;
                    }
            }
            if (inc.full_solves() * 2 > inc.solves()) {
                std::printf("FAIL seed %llu: %llu of %llu solves refilled a whole component\n", (unsigned long long)seed,
                            (unsigned long long)inc.full_solves(), (unsigned long long)inc.solves());
                ++failures;
            }
            if (full.full_solves() != full.solves()) {
                std::printf("FAIL seed %llu: the reference solved incrementally\n", (unsigned long long)seed);
                ++failures;
            }
        }
    }
    {
        // Incremental solving equals solving afresh, over random arrivals and departures.
        std::mt19937_64 rng(25);
        FlowSolver inc;
        const int kResources = 12;
        std::vector<double> cap;
        for (int r = 0; r < kResources; ++r) {
            cap.push_back(1 + double(rng() % 100));
            inc.add_resource(cap.back());
        }
        std::vector<std::vector<FlowSolver::Use>> uses(200);
        std::vector<bool> active(200, false);
        for (int step = 0; step < 400; ++step) {
            const std::uint32_t f = std::uint32_t(rng() % uses.size());
            if (active[f]) {
                inc.remove_flow(f);
                active[f] = false;
            } else {
                uses[f] = random_uses(rng, kResources);
                inc.add_flow(f, uses[f]);
                active[f] = true;
            }
            if (step % 3) continue;
            solve(inc);
            const auto fresh = solved_afresh(cap, uses, active);
            for (std::uint32_t g = 0; g < uses.size(); ++g)
                if (active[g]) expect("incremental = fresh", inc.rate(g), fresh->rate(g));
            for (int r = 0; r < kResources; ++r) {
                if (inc.load(std::uint32_t(r)) > cap[std::size_t(r)] * (1 + 1e-9)) {
                    std::printf("FAIL resource %d over capacity\n", r);
                    ++failures;
                }
            }
        }
    }
    {
        // Max-min optimality on random small instances, checked from its definition rather than
        // against another solver: the allocation is feasible (no resource over capacity), and every
        // flow has a bottleneck, a resource it uses that is full and on which no flow has a higher
        // rate (the rates are what progressive filling equalises; the weights only say what a unit
        // of rate takes of the resource). Then no flow's rate can rise without lowering that of a
        // flow whose rate is no higher, which is the definition.
        std::mt19937_64 rng(2525);
        for (int instance = 0; instance < 500; ++instance) {
            FlowSolver s;
            const int resources = 2 + int(rng() % 5), flows = 2 + int(rng() % 7);
            std::vector<double> cap;
            for (int r = 0; r < resources; ++r) {
                cap.push_back(1 + double(rng() % 50));
                s.add_resource(cap.back());
            }
            std::vector<std::vector<FlowSolver::Use>> uses(static_cast<std::size_t>(flows));
            for (int f = 0; f < flows; ++f) {
                while (uses[std::size_t(f)].empty())  // every flow uses at least one resource
                    for (int r = 0; r < resources; ++r)
                        if (rng() % 3 == 0) uses[std::size_t(f)].push_back({std::uint32_t(r), 0.25 + double(rng() % 12) / 4});
                s.add_flow(std::uint32_t(f), uses[std::size_t(f)]);
            }
            solve(s);
            std::vector<double> load(std::size_t(resources), 0.0), top(std::size_t(resources), 0.0);
            for (int f = 0; f < flows; ++f)
                for (const FlowSolver::Use& u : uses[std::size_t(f)]) {
                    load[u.resource] += s.rate(std::uint32_t(f)) * u.weight;
                    top[u.resource] = std::max(top[u.resource], s.rate(std::uint32_t(f)));
                }
            for (int r = 0; r < resources; ++r)
                if (load[std::size_t(r)] > cap[std::size_t(r)] * (1 + 1e-9)) {
                    std::printf("FAIL instance %d: resource %d over capacity\n", instance, r);
                    ++failures;
                }
            for (int f = 0; f < flows; ++f) {
                const double rate = s.rate(std::uint32_t(f));
                bool bottleneck = false;
                for (const FlowSolver::Use& u : uses[std::size_t(f)])
                    bottleneck |= load[u.resource] >= cap[u.resource] * (1 - 1e-9) && rate >= top[u.resource] * (1 - 1e-9);
                if (!(rate > 0) || !bottleneck) {
                    std::printf("FAIL instance %d: flow %d (rate %.9g) has no bottleneck\n", instance, f, rate);
                    ++failures;
                }
            }
        }
    }
    {
        // Identical flows form one group (flow_solver.h): on a link of 12, three flows of weight 1
        // with identical uses and one of weight 2 reach r with 3r + 2r = 12: r = 2.4 each, in two
        // groups. One of the three leaves: 2r + 2r = 12, r = 3. Every flow whose rate moved, and
        // every new one, is reported.
        FlowSolver s;
        const auto a = s.add_resource(12);
        std::vector<std::uint32_t> told;
        auto run = [&] { s.solve([](std::uint32_t) {}, [&](std::uint32_t f) { told.push_back(f); }); };
        for (std::uint32_t f = 0; f < 3; ++f) s.add_flow(f, {{a, 1}});
        s.add_flow(3, {{a, 2}});
        run();
        for (std::uint32_t f = 0; f < 4; ++f) expect("grouped flow", s.rate(f), 2.4);
        expect("groups of four flows", double(s.groups()), 2);
        expect("flows told", double(told.size()), 4);
        told.clear();
        s.remove_flow(1);
        run();
        for (std::uint32_t f : {0u, 2u, 3u}) expect("after one left", s.rate(f), 3);
        std::sort(told.begin(), told.end());
        if (told != std::vector<std::uint32_t>{0, 2, 3}) {
            std::printf("FAIL the flows whose rate moved were not all told\n");
            ++failures;
        }
        // A newcomer to a group whose rate does not move is told its rate all the same: two twins
        // share a second link of 6 (3 each); one leaves as another arrives, and the rate stays 3.
        const auto b = s.add_resource(6);
        s.add_flow(10, {{b, 1}});
        s.add_flow(11, {{b, 1}});
        run();
        expect("twin", s.rate(10), 3);
        told.clear();
        s.remove_flow(11);
        s.add_flow(12, {{b, 1}});  // same count as before: the group's rate stays 3
        run();
        expect("newcomer to a steady group", s.rate(12), 3);
        if (std::find(told.begin(), told.end(), 12u) == told.end()) {
            std::printf("FAIL a flow joining a group of unchanged rate was not told its rate\n");
            ++failures;
        }
    }
    {
        // Many identical flows, coming and going at random, on a switch in miniature: after every
        // solve the rates are max-min fair from the definition (feasible, and each flow has a
        // bottleneck), and the rates told through `changed` are the solver's (what the fabric
        // holds never goes stale).
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            std::mt19937_64 rng(1000 + seed);
            const std::uint32_t gpus = 3 + std::uint32_t(rng() % 6);
            FlowSolver s;
            std::vector<double> cap;
            for (std::uint32_t r = 0; r < 2 * gpus + 1; ++r) {
                cap.push_back(20 + double(rng() % 60));
                s.add_resource(cap.back());
            }
            // A few templates, so most flows share their uses with others.
            std::vector<std::vector<FlowSolver::Use>> templates;
            for (int t = 0; t < 6; ++t) {
                const std::uint32_t src = std::uint32_t(rng() % gpus), dst = (src + 1 + std::uint32_t(rng() % (gpus - 1))) % gpus;
                templates.push_back({{2 * src, 1.0}, {2 * dst + 1, 1.0 + double(rng() % 3) / 8}});
                if (rng() % 2) templates.back().push_back({2 * gpus, 0.5});  // a shared engine
            }
            const std::uint32_t kFlows = 40;
            std::vector<int> tmpl(kFlows, -1);
            std::vector<double> known(kFlows, 0.0);
            for (int step = 0; step < 300; ++step) {
                toggle_flows(s, rng, templates, tmpl);
                s.solve([](std::uint32_t) {}, [&](std::uint32_t f) { known[f] = s.rate(f); });
                for (std::uint32_t f = 0; f < kFlows; ++f)
                    if (tmpl[f] >= 0 && known[f] != s.rate(f)) {
                        std::printf("FAIL seed %llu step %d: flow %u told %.12g, rate %.12g\n", (unsigned long long)seed,
                                    step, f, known[f], s.rate(f));
                        ++failures;
                    }
                check_max_min(s, templates, tmpl, cap, "identical flows", seed, step);
            }
        }
    }
    {
        // A group keeps up to 9 uses in its record and more in a list of their own: a flow over 12
        // links of 12 (A, then C with the same uses: one group of 2, weight 2 on each link), E on
        // link 3 only (added first, so A's group is second among link 3's members) and B on link 0
        // at weight 2. Link 0 fills first, A + C + 2B = 4x = 12: x = 3 each; link 3 then has
        // 12 - 6 = 6 left, all E's.
        FlowSolver s;
        std::vector<FlowSolver::Use> chain;
        for (int r = 0; r < 12; ++r) chain.push_back({s.add_resource(12), 1.0});
        s.add_flow(4, {{3, 1.0}});  // E
        s.add_flow(0, chain);       // A
        s.add_flow(2, chain);       // C
        s.add_flow(1, {{0, 2.0}});  // B
        solve(s);
        expect("long use list, A", s.rate(0), 3);
        expect("long use list, C", s.rate(2), 3);
        expect("long use list, B", s.rate(1), 3);
        expect("long use list, E", s.rate(4), 6);
        expect("long use list, link 3 full", s.load(3), 12);
        // E leaves: A's group moves to the first place among link 3's members (its place there,
        // kept in its own list of uses, must follow), the rest hold. B leaves: A and C share every
        // link, 2x = 12: 6 each.
        s.remove_flow(4);
        solve(s);
        expect("after E, A", s.rate(0), 3);
        s.remove_flow(1);
        solve(s);
        expect("after B, A", s.rate(0), 6);
        expect("after B, C", s.rate(2), 6);
        expect("after B, link 3", s.load(3), 12);
        // C leaves: the group's weight on each link is A's alone (written where the group's place
        // says), A takes a whole link, 12. Then F joins on link 3: A + F = 2x = 12, 6 each.
        s.remove_flow(2);
        solve(s);
        expect("A alone", s.rate(0), 12);
        expect("A alone, link 3", s.load(3), 12);
        s.add_flow(5, {{3, 1.0}});
        solve(s);
        expect("A beside F", s.rate(0), 6);
        expect("F beside A", s.rate(5), 6);
        expect("A beside F, link 0", s.load(0), 6);
    }
    {
        // Use lists both sides of the 9 kept in a group's record (2 to 16 uses), flows coming and
        // going at random: after every solve the rates are max-min fair from the definition
        // (no resource over capacity, every flow has a bottleneck).
        for (std::uint64_t seed = 1; seed <= 10; ++seed) {
            std::mt19937_64 rng(5000 + seed);
            FlowSolver s;
            std::vector<double> cap;
            for (int r = 0; r < 24; ++r) {
                cap.push_back(20 + double(rng() % 60));
                s.add_resource(cap.back());
            }
            std::vector<std::vector<FlowSolver::Use>> templates;
            for (int t = 0; t < 8; ++t) {
                const std::uint32_t n = 2 + std::uint32_t(rng() % 15), first = std::uint32_t(rng() % 24);
                templates.emplace_back();
                for (std::uint32_t k = 0; k < n; ++k)
                    templates.back().push_back({(first + 3 * k) % 24, 1.0 + double(rng() % 4) / 8});
                std::sort(templates.back().begin(), templates.back().end(),
                          [](const FlowSolver::Use& a, const FlowSolver::Use& b) { return a.resource < b.resource; });
                templates.back().erase(std::unique(templates.back().begin(), templates.back().end(),
                                                   [](const FlowSolver::Use& a, const FlowSolver::Use& b) {
                                                       return a.resource == b.resource;
                                                   }),
                                       templates.back().end());
            }
            const std::uint32_t kFlows = 30;
            std::vector<int> tmpl(kFlows, -1);
            for (int step = 0; step < 200; ++step) {
                toggle_flows(s, rng, templates, tmpl);
                solve(s);
                const std::vector<double> load = check_max_min(s, templates, tmpl, cap, "long uses", seed, step);
                for (std::size_t r = 0; r < cap.size(); ++r)
                    expect("long uses, the solver's load", s.load(std::uint32_t(r)), load[r]);
            }
        }
    }
    {
        // The fill's two ways to find the next full resource, a scan and a heap of levels, give the
        // same rates bit for bit: a switch in miniature as above, up to 64 GPUs (128 resources, so
        // the whole-component refills are larger than the default scan limit), solved by a solver
        // that always scans and one that always uses the heap, each also checked max-min fair
        // from the definition.
        for (std::uint64_t seed = 1; seed <= 12; ++seed) {
            std::mt19937_64 rng(9000 + seed);
            const int gpus = 8 + int(rng() % 57);
            FlowSolver scan, heap;
            scan.set_scan_fill(std::numeric_limits<std::size_t>::max());
            heap.set_scan_fill(0, 0);
            const std::vector<double> cap = random_switch_links(rng, gpus, {&scan, &heap});
            Templates templates;
            for (int t = 0; t < 4 * gpus; ++t) templates.push_back(random_switch_flow(rng, gpus));
            std::vector<int> tmpl(8 * std::size_t(gpus), -1), same = tmpl;
            std::mt19937_64 rng2 = rng;  // the same changes for both solvers
            for (int step = 0; step < 300; ++step) {
                toggle_flows(scan, rng, templates, tmpl);
                toggle_flows(heap, rng2, templates, same);
                solve(scan);
                solve(heap);
                for (std::uint32_t f = 0; f < tmpl.size(); ++f) {
                    const double a = scan.rate(f), b = heap.rate(f);
                    if (std::memcmp(&a, &b, sizeof(double)) != 0) {
                        std::printf("FAIL scan vs heap, seed %llu step %d flow %u: %.17g vs %.17g\n",
                                    (unsigned long long)seed, step, f, a, b);
                        ++failures;
                    }
                }
                check_max_min(scan, templates, tmpl, cap, "scan fill", seed, step);
            }
        }
    }
    {
        // Served first (a write's acknowledgements on its reverse links). Down link D and up link U of
        // 100: flow 0 brings data down D (weight 1); flow 1 sends data up U (weight 1) and its
        // acknowledgements cross D (weight 0.1). Shared fairly, D fills first, at 100 / 1.1 each
        // (90.909..), holding flow 1 below what U allows; served first, flow 1 is held by U alone,
        // 100, and flow 0 gets what its acknowledgements leave of D, 100 - 0.1 x 100 = 90.
        for (bool first : {false, true}) {
            FlowSolver s;
            const auto d = s.add_resource(100), u = s.add_resource(100);
            s.add_flow(0, {{d, 1}});
            s.add_flow(1, {{u, 1}, {d, 0.1, first}});
            solve(s);
            expect(first ? "served first, data down" : "fair, data down", s.rate(0), first ? 90 : 100 / 1.1);
            expect(first ? "served first, data up" : "fair, data up", s.rate(1), first ? 100 : 100 / 1.1);
            expect(first ? "served first, D full" : "fair, D full", s.load(d), 100);
        }
    }
    {
        // Served first both ways, a fixed point: X of 11 and Y of 22; flow 0 sends data over X (1) with
        // acknowledgements over Y (0.1), flow 1 the other way. r0 + 0.1 r1 = 11 and r1 + 0.1 r0 = 22
        // give r0 = 8.8 / 0.99 = 8.888.., r1 = 22 - 0.1 r0 = 21.111.. (shared fairly: X fills first
        // at 11 / 1.1 = 10 and holds both there). Both paths: a component refilled whole, and the
        // incremental one.
        for (std::size_t small : {FlowSolver::kSmallComponent, std::size_t(0)}) {
            FlowSolver s;
            s.set_small_component(small);
            const auto x = s.add_resource(11), y = s.add_resource(22);
            s.add_flow(0, {{x, 1}, {y, 0.1, true}});
            s.add_flow(1, {{y, 1}, {x, 0.1, true}});
            solve(s);
            expect("crossing, served first, flow 0", s.rate(0), 8.8 / 0.99);
            expect("crossing, served first, flow 1", s.rate(1), 22 - 0.88 / 0.99);
            expect("crossing, X full", s.load(x), 11);
            expect("crossing, Y full", s.load(y), 22);
            // One fill, with the new flows' acknowledgements at 0 (r0 = 11, r1 = 22), then the two
            // bottlenecks' fixed point above, solved for exactly (X and Y each full with both loads at their
            // flows' levels) and taken as the rates once they pass as max-min fair: a second fill would only
            // confirm it. Filling again with the last fill's rates instead cuts the error by 0.1 x 0.1 a
            // round trip of the two: 1e-9 in about ten fills.
            expect("crossing, fills", double(s.fills()), 1);
        }
    }
    {
        // The same crossing with acknowledgements nearly as heavy as the data (weight 3 and 2.9 on links of 400),
        // and heavier (3.1): 3 r0 + w r1 = 400 and 3 r1 + w r0 = 400 give r0 = r1 = 400 / (3 + w). Gauss-Seidel
        // cuts its error by (w / 3)^2 a sweep, so at 2.9 it needs some 500 sweeps and at 3.1 it diverges; both
        // are solved directly (solve_levels_directly). Before, 2.9 gave 44.9 each with the links 66% full, and
        // 3.1 gave 0 each: neither write ever finished (scripts/fuzz.py's flow campaign, 2026-12-06).
        for (double w : {2.9, 3.1}) {
            FlowSolver s;
            const auto x = s.add_resource(400), y = s.add_resource(400);
            s.add_flow(0, {{x, 3}, {y, w, true}});
            s.add_flow(1, {{y, 3}, {x, w, true}});
            solve(s);
            const std::string name = "heavy acknowledgements " + std::to_string(w);
            expect((name + ", flow 0").c_str(), s.rate(0), 400 / (3 + w));
            expect((name + ", flow 1").c_str(), s.rate(1), 400 / (3 + w));
            expect((name + ", X full").c_str(), s.load(x), 400);
        }
    }
    {
        // Alike bottlenecks get one level, bit for bit, as a fill gives them: every pair of g GPUs on a switch
        // in miniature (resource 2i: GPU i's up link, 2i + 1: its down link), each flow's data on its source's
        // up and its destination's down link (341 wire bytes a 256-byte packet), its acknowledgements (16
        // bytes) on the reverse links, served first. Every flow gets the same rate. The solved levels
        // (Gauss-Seidel, row after row) came out an ulp or so apart, so flows alike ended picoseconds apart in
        // the fabric, each end a solve of its own (switch-8gpu's 16 MiB direct all-reduce: 3.9 times the solves).
        int unequal = 0;
        for (std::uint32_t g = 3; g <= 12; ++g)
            for (double c : {64e9, 50e9, 100e9, 3e10 / 7}) {
                FlowSolver s;
                for (std::uint32_t i = 0; i < 2 * g; ++i) s.add_resource(c);
                std::uint32_t id = 0;
                for (std::uint32_t a = 0; a < g; ++a)
                    for (std::uint32_t b = 0; b < g; ++b)
                        if (a != b)
                            s.add_flow(id++, {{2 * a, 341.0 / 256}, {2 * b + 1, 341.0 / 256},
                                              {2 * b, 16.0 / 256, true}, {2 * a + 1, 16.0 / 256, true}});
                solve(s);
                for (std::uint32_t f = 0; f < id; ++f) unequal += s.rate(f) != s.rate(0);
                expect("a switch's pairs alike, each flow", s.rate(0), c / (g - 1) / (357.0 / 256));
            }
        if (unequal) {
            std::printf("FAIL a switch's pairs alike: %d flows' rates differ from their alikes'\n", unequal);
            ++failures;
        }
    }
    {
        // Solved levels that do not hold must not be taken: X of 10 and Z of 10.5; flow 0 sends over both
        // (weight 1 each), flow 1 over Y of 100 with its acknowledgements on Z (0.1, served first). The
        // first fill, those at 0, holds flow 0 at X's 10 and flow 1 at Y's 100. Its bottlenecks' levels
        // are the same, 10 and 100, but they load Z with 10 + 0.1 x 100 = 20 > 10.5: refused, the second
        // fill finds Z the bottleneck of flow 0, at 10.5 - 10 = 0.5.
        for (std::size_t small : {FlowSolver::kSmallComponent, std::size_t(0)}) {
            FlowSolver s;
            s.set_small_component(small);
            const auto x = s.add_resource(10), z = s.add_resource(10.5), y = s.add_resource(100);
            s.add_flow(0, {{x, 1}, {z, 1}});
            s.add_flow(1, {{y, 1}, {z, 0.1, true}});
            solve(s);
            expect("refused levels, flow 0", s.rate(0), 0.5);
            expect("refused levels, flow 1", s.rate(1), 100);
            expect("refused levels, Z full", s.load(z), 10.5);
            expect("refused levels, fills", double(s.fills()), 2);
        }
    }
    {
        // A served-first load that puts a held flow's resource over capacity, where that resource is
        // not its bottleneck (the incremental path must take it in all the same). Flow 0 crosses X (10)
        // and Z (9): Z holds it at 9. Flow 1 then sends over Y (20), its acknowledgements over X
        // (0.1): 20, taking 2 of X first, so flow 0 gets 10 - 2 = 8.
        FlowSolver s;
        s.set_small_component(0);
        const auto x = s.add_resource(10), z = s.add_resource(9), y = s.add_resource(20);
        s.add_flow(0, {{x, 1}, {z, 1}});
        solve(s);
        expect("held by Z", s.rate(0), 9);
        s.add_flow(1, {{y, 1}, {x, 0.1, true}});
        solve(s);
        expect("X's acknowledgements first, flow 0", s.rate(0), 8);
        expect("X's acknowledgements first, flow 1", s.rate(1), 20);
        expect("X's acknowledgements first, X full", s.load(x), 10);
    }
    for (const bool coupled : {false, true}) {
        // Served-first acknowledgements on a switch in miniature, flows coming and going at random:
        // after every solve the rates meet the definition (feasible; every flow has a bottleneck among
        // the resources it shares fairly), on the incremental path and refilled whole, and the two
        // agree within the tolerance that the fabric treats as rounding. `coupled`: each source's flows
        // coupled (add_coupled_flow), which must then have one rate; a coupled flow's bottleneck may be
        // another's resource, so only feasibility is checked of the definition.
        const char* what = coupled ? "coupled" : "served first";
        for (std::uint64_t seed = 1; seed <= 12; ++seed) {
            std::mt19937_64 rng(13000 + seed);
            const int gpus = 4 + int(rng() % 29);
            FlowSolver inc, whole;
            inc.set_small_component(0);
            whole.set_incremental(false);
            const std::vector<double> cap = random_switch_links(rng, gpus, {&inc, &whole});
            Templates templates;
            for (int t = 0; t < 4 * gpus; ++t) templates.push_back(random_switch_flow(rng, gpus, true));
            std::vector<int> tmpl(6 * std::size_t(gpus), -1), same = tmpl;
            std::mt19937_64 rng2 = rng;
            for (int step = 0; step < 200; ++step) {
                toggle_flows(inc, rng, templates, tmpl, coupled);
                toggle_flows(whole, rng2, templates, same, coupled);
                solve(inc);
                solve(whole);
                std::vector<double> load(cap.size(), 0.0), source_rate(cap.size(), -1.0);
                for (std::uint32_t f = 0; f < tmpl.size(); ++f) {
                    if (tmpl[f] < 0) continue;
                    if (std::fabs(inc.rate(f) - whole.rate(f)) > 1e-7 * whole.rate(f)) {
                        std::printf("FAIL %s, incremental vs whole, seed %llu step %d flow %u: %.12g vs %.12g\n", what,
                                    (unsigned long long)seed, step, f, inc.rate(f), whole.rate(f));
                        ++failures;
                    }
                    const std::vector<FlowSolver::Use>& uses = templates[std::size_t(tmpl[f])];
                    for (const FlowSolver::Use& u : uses) load[u.resource] += inc.rate(f) * u.weight;
                    double& one = source_rate[uses.front().resource];
                    if (coupled && one >= 0 && std::fabs(one - inc.rate(f)) > 1e-12 * one) {
                        std::printf("FAIL coupled, seed %llu step %d: flow %u at %.12g beside %.12g\n",
                                    (unsigned long long)seed, step, f, inc.rate(f), one);
                        ++failures;
                    }
                    one = inc.rate(f);
                }
                if (!coupled) {
                    check_max_min(inc, templates, tmpl, cap, "served first, incremental", seed, step);
                    check_max_min(whole, templates, tmpl, cap, "served first, whole", seed, step);
                    continue;
                }
                for (std::size_t r = 0; r < cap.size(); ++r)
                    if (load[r] > cap[r] * (1 + 1e-8)) {
                        std::printf("FAIL coupled, seed %llu step %d: resource %zu over capacity\n",
                                    (unsigned long long)seed, step, r);
                        ++failures;
                    }
            }
        }
    }
    {
        // Capacities that change (set_capacity: the flow fabric's incast queues tighten a link while its
        // queue is full and free it again), beside flows that come and go: after every solve the
        // incremental rates equal a fresh solve of the same flows on the same capacities, on the default
        // path and with every solve incremental, and no resource is over its capacity.
        for (std::uint64_t seed = 1; seed <= 12; ++seed) {
            std::mt19937_64 rng(27000 + seed);
            const int kResources = 10;
            std::vector<double> cap;
            FlowSolver inc, dflt;
            inc.set_small_component(0);
            inc.set_backoff(false);
            for (int r = 0; r < kResources; ++r) {
                cap.push_back(1 + double(rng() % 100));
                inc.add_resource(cap.back());
                dflt.add_resource(cap.back());
            }
            std::vector<std::vector<FlowSolver::Use>> uses(120);
            std::vector<bool> active(uses.size(), false);
            for (int step = 0; step < 300; ++step) {
                if (rng() % 3 == 0) {  // a capacity changes: tightened, or freed to a thousand times over
                    const std::uint32_t r = std::uint32_t(rng() % kResources);
                    cap[r] = rng() % 2 ? 1 + double(rng() % 100) : 1000.0 * (1 + double(rng() % 100));
                    inc.set_capacity(r, cap[r]);
                    dflt.set_capacity(r, cap[r]);
                } else {
                    const std::uint32_t f = std::uint32_t(rng() % uses.size());
                    if (active[f]) {
                        inc.remove_flow(f);
                        dflt.remove_flow(f);
                    } else {
                        uses[f] = random_uses(rng, kResources);
                        if (uses[f].empty()) uses[f].push_back({std::uint32_t(rng() % kResources), 1.0});
                        inc.add_flow(f, uses[f]);
                        dflt.add_flow(f, uses[f]);
                    }
                    active[f] = !active[f];
                }
                solve(inc);
                solve(dflt);
                const auto fresh = solved_afresh(cap, uses, active);
                for (std::uint32_t g = 0; g < uses.size(); ++g)
                    for (const FlowSolver* s : {&inc, &dflt})
                        if (active[g] && std::fabs(s->rate(g) - fresh->rate(g)) > 1e-8 * fresh->rate(g)) {
                            std::printf("FAIL capacity change, seed %llu step %d flow %u: %s %.12g, fresh %.12g\n",
                                        (unsigned long long)seed, step, g, s == &inc ? "incremental" : "default",
                                        s->rate(g), fresh->rate(g));
                            ++failures;
                        }
                for (int r = 0; r < kResources; ++r)
                    if (inc.load(std::uint32_t(r)) > cap[std::size_t(r)] * (1 + 1e-8)) {
                        std::printf("FAIL capacity change, seed %llu step %d: resource %d over capacity\n",
                                    (unsigned long long)seed, step, r);
                        ++failures;
                    }
            }
        }
    }
    {
        // A change that ripples down a chain: flow i uses resources i and i + 1 (capacity 10 + i,
        // i = 0..7) and flow 8 uses resource 0 alone. Progressive filling by hand: with flow 8,
        // resource 0 fills first at 5 (flows 0 and 8), then resource 1 has 11 - 5 = 6 for flow 1,
        // resource 2 12 - 6 = 6 for flow 2, and so on: 5 6 6 7 7 8 8 9. Without it, resource 1
        // fills first at 11 / 2 (flows 0 and 1), then resource 3 at 13 / 2: 5.5 5.5 6.5 6.5 7.5
        // 7.5 8.5 8.5. Taking flow 8 away or back moves every rate, but the incremental check
        // finds them one resource a refill (each held flow joins S when its neighbour's rate has
        // moved), eight refills of a growing S where refilling the component takes one. Taking
        // the incremental path every time (`always`) and choosing by what each path has cost
        // (`chooser`, the default) give the same rates; the chooser refills the component in
        // most of the changes and does fewer fills.
        const double with8[] = {5, 6, 6, 7, 7, 8, 8, 9}, without8[] = {5.5, 5.5, 6.5, 6.5, 7.5, 7.5, 8.5, 8.5};
        FlowSolver always, chooser;
        always.set_backoff(false);
        for (FlowSolver* s : {&always, &chooser}) {
            s->set_small_component(0);  // a component of nine flows: take the incremental path all the same
            for (std::uint32_t r = 0; r <= 8; ++r) s->add_resource(10.0 + r);
            for (std::uint32_t i = 0; i < 8; ++i) s->add_flow(i, {{i, 1}, {i + 1, 1}});
        }
        bool present = false;
        for (int change = 0; change < 24; ++change) {
            for (FlowSolver* s : {&always, &chooser}) {
                if (present) s->remove_flow(8);
                else s->add_flow(8, {{0, 1}});
                solve(*s);
                for (std::uint32_t i = 0; i < 8; ++i)
                    expect(s == &always ? "chain, always incremental" : "chain, chosen path", s->rate(i),
                           present ? without8[i] : with8[i]);
            }
            present = !present;
        }
        expect("the always-incremental solver never refills whole", double(always.full_solves()), 0);
        if (chooser.full_solves() < 12 || chooser.fills() >= always.fills()) {
            std::printf("FAIL chain: the chooser refilled whole in %llu of 24 solves with %llu fills (always "
                        "incremental: %llu fills)\n", (unsigned long long)chooser.full_solves(),
                        (unsigned long long)chooser.fills(), (unsigned long long)always.fills());
            ++failures;
        }
    }
    std::printf("flow solver: %d failures\n", failures);
    return failures ? 1 : 0;
}
