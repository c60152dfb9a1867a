// Weighted max-min fair rates of flows over shared resources, by progressive filling (the
// solver of flow-level network simulators such as SimGrid's and flowSim's), recomputed
// incrementally where flows came or went.
//
// A resource has a capacity; a flow uses some resources, each with a weight: at rate r it takes
// r x weight of that resource. For the flow fabric a rate is payload bytes per second, a link's
// capacity is its bytes per second over all lanes and a flow's weight on it is the wire bytes it
// puts there per payload byte (headers, acknowledgements, its share of spread paths); a GPU's
// window is a resource of `max_outstanding` packets and a flow's weight on it is the time one of
// its packets holds a slot per payload byte.
//
// Progressive filling: every unfrozen flow's rate grows at the same pace; the first resource to
// fill freezes the flows through it at that rate (that resource is their bottleneck); the rest go
// on. The result is the unique weighted max-min fair allocation, characterised by: no resource is
// over capacity, and every flow has a bottleneck, a full resource on which no flow has a higher
// rate. solve() uses that characterisation to recompute only what a change can move:
//   - it refills a set S of flows (first the new ones) against what the other flows leave of
//     each resource, with the others' rates held;
//   - it then checks the bottleneck of every flow of S and of every held flow whose bottleneck is a
//     resource S or the change touched; a flow without one joins S (with the held flows that
//     out-rate an S flow on its bottleneck), and S is refilled;
//   - when S stops growing without passing, or grows past a share of the flows, it falls back to
//     filling the whole connected component of the change (the only path before issue 25);
//   - a component of a few flows (kSmallComponent) is refilled whole at once, which is cheaper;
//   - where the steps fail, or pass at more work than a whole refill has been costing, the next
//     solves refill whole, for longer the more often that happens (set_backoff); steps that have
//     cost that much without passing stop there and refill whole.
// Flows with identical uses (the same resources with bit-identical weights) always get the same
// rate, the allocation being unique: the solver keeps them as one group of c flows whose weight
// on each resource is c times a flow's, so a solve costs what the distinct groups hold, not every
// flow. That is what makes NVLS cheap: on 8 GPUs some 130 flows in a solve, all coupled through
// the switch, fall into about 10 groups (one per requester and phase).
// Coupled flows (add_coupled_flow, one key) are one group too, whose uses are the sum of theirs: they get
// one rate, the group being filled as one flow over all their resources (the flow fabric's writes queued
// behind one another's head packet in a GPU's injection queue). A coupled flow coming or going rebuilds
// its key's group; the group starts from the old one's rate, so the flows whose rate holds are not reported.
// The check holds to a relative tolerance kTolerance (1e-9): a resource within it of its capacity
// is full and a rate within it of the resource's highest is the highest. A flow whose new rate is
// within kTolerance of its old one keeps the old one and is not reported changed: such a change
// moves its finish by at most 1e-9 of its time left, under 1 ps for any flow with less than 1 ms
// to go (times are whole picoseconds), and reporting it would make the fabric schedule a new
// finish for what is only rounding.
// Uses served first (Use::first) take their load before the fair shares: the flows that share a
// resource fairly get its capacity less what the served-first uses take at their flows' rates,
// and a flow is never frozen by a resource it only uses served first. The fill holds those
// loads at an estimate of their flows' rates (their rates before the change, 0 for new flows)
// and, where S has such uses, fills again until the rates it finds are its estimates to within
// kTolerance (settle()). The next estimates are the fixed point of the last fill's bottlenecks,
// solved for (solve_levels()): where the bottlenecks hold, the next fill would only confirm them, so
// the levels are taken as the rates once they pass the characterisation below (adopt_levels()).
// Levels within a part in 10^12 of each other are made one first (snap_levels()), as a fill would
// give bottlenecks that are alike: solved row by row they came out an ulp apart.
// Iterating the rates instead cuts the error only by the served-first share of the loads, some
// 20-fold a fill, and took 7 or 8 fills where solving takes 1 or 2. The check also refuses a resource that those
// loads put over capacity as a bottleneck, and takes its fair users into S.
// Everything runs in a fixed order (resource and flow indices, insertion order), so the same
// sequence of calls gives bit-identical rates.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "eidola/flat_index.h"

namespace eidola {

/// Rates of flows over resources, recomputed where flows came or went.
class FlowSolver {
public:
    /// One resource a flow uses, with its weight (resource units per unit of the flow's rate).
    struct Use {
        std::uint32_t resource;
        double weight;
        /// Served first: the flow takes rate x weight of the resource before the fair shares of
        /// the others there, and the resource never holds the flow back (a write's
        /// acknowledgements on its reverse links, which a router lets through in turns of bytes
        /// between its inputs; see the file comment). A flow that uses nothing but such uses has
        /// them all as ordinary ones.
        bool first = false;
    };
    static constexpr double kUnlimited = std::numeric_limits<double>::infinity();
    /// Relative tolerance of "full", "highest rate" and "rate unchanged" (see the file comment).
    static constexpr double kTolerance = 1e-9;

    /// Adds a resource of `capacity` units per second (> 0); returns its index.
    std::uint32_t add_resource(double capacity);
    /// Changes `resource`'s capacity (> 0); the next solve() re-rates the flows it can move, as for a
    /// flow that came or went there.
    void set_capacity(std::uint32_t resource, double capacity);
    /// Starts flow `id` (any index; storage grows to it) over `uses`, each resource at most once.
    /// A flow with no uses has an unlimited rate. A `tagged` flow's load is also counted apart
    /// (tagged_load); it never shares a group with an untagged one, and its rates are the same.
    void add_flow(std::uint32_t id, const std::vector<Use>& uses, bool tagged = false);
    /// Starts flow `id` over `uses` coupled to the other flows added with the same `couple` key: they
    /// all get one rate, as if one flow over the sum of their uses (a GPU's injection queue, where a
    /// head packet held back holds every flow behind it). Coupled flows never share a group with
    /// uncoupled ones; all flows of one key must be alike `tagged`.
    void add_coupled_flow(std::uint32_t id, const std::vector<Use>& uses, bool tagged, std::uint64_t couple);
    /// Ends flow `id`.
    void remove_flow(std::uint32_t id);
    /// The current rate of flow `id` (as of the last solve()).
    double rate(std::uint32_t id) const {
        return id < m_group_of.size() && m_group_of[id] != kNone ? m_rate[m_group_of[id]] : 0.0;
    }
    /// The current load of `resource`: the sum of rate x weight of its flows.
    double load(std::uint32_t resource) const { return m_load[resource]; }
    /// The part of load(`resource`) that tagged flows (add_flow) put there.
    double tagged_load(std::uint32_t resource) const { return m_tagged_load[resource]; }
    /// The capacity of `resource`.
    double capacity(std::uint32_t resource) const { return m_resources[resource].capacity; }
    /// Resources added so far.
    std::uint32_t resources() const { return std::uint32_t(m_resources.size()); }
    /// Whether flows came or went since the last solve().
    bool dirty() const { return !m_dirty.empty() || !m_new_groups.empty(); }
    /// Whether solve() may recompute only the flows a change can move (default) or must refill
    /// the whole connected component of every change (the reference the tests compare with).
    void set_incremental(bool on) { m_incremental = on; }
    /// Components of at most `flows` groups of identical flows are refilled whole without the incremental steps
    /// (default kSmallComponent; 0 makes every solve take the incremental path, for tests).
    void set_small_component(std::size_t flows) { m_small_component = flows; }
    /// The default of set_small_component: about a component's size on 8 GPUs of a switch, where
    /// one refill of the component costs less than the incremental path's refills and checks.
    static constexpr std::size_t kSmallComponent = 32;
    /// Whether a solve whose incremental steps fell back to the whole component, or passed at more
    /// work than refilling the component costs, makes the next solves refill whole at once
    /// (default on): 1 solve after one such attempt, doubling up to kMaxBackoff while they keep
    /// failing or costing more, back to trying after a cheaper success. Where changes couple most
    /// flows (NVLS: every flow meets the switch's reduction) nearly every attempt falls back, and
    /// its steps are wasted work (+54% CPU on an 8-GPU NVLS all-reduce); on a 16-GPU torus
    /// all-to-all the steps pass, but after three refills of S and six fills, where one refill of
    /// the component takes 1.4 fills (1.8x the CPU of the run). Steps that have cost more than a
    /// whole refill without passing stop and refill whole (rail-16gpu's 1 GiB all-to-all: failed
    /// attempts had cost 3x a whole refill each; 18% less CPU). Work is counted in members of the
    /// touched resources that the walk of the component, fills, measures and checks pass, so the
    /// choice is deterministic.
    void set_backoff(bool on) { m_backoff_on = on; }
    /// The longest run of solves refilled whole after fall-backs before trying again.
    static constexpr std::uint32_t kMaxBackoff = 64;
    /// Fills of at most `resources` touched resources find each step's full resource by a scan of
    /// them, larger ones by a heap of fill levels (default kScanFill). Both give the same rates bit
    /// for bit (the tests hold them to it); only the cost differs: the scan costs the touched
    /// resources per step, the heap a logarithm per entry it queues, and a fill of a few dozen
    /// resources moves most of them at every step.
    /// A fill of more resources is scanned all the same while its touched resources times its
    /// unfrozen groups stay within `work` (default kScanWork; `resources` and `work` 0: always the
    /// heap, for tests).
    void set_scan_fill(std::size_t resources, std::size_t work = kScanWork) {
        m_scan_fill = resources;
        m_scan_work = work;
    }
    /// The default of set_scan_fill.
    static constexpr std::size_t kScanFill = 64;
    /// The default work of set_scan_fill: touched resources times unfrozen groups bounds the scan's
    /// level computations (one per resource per step). The incremental solves at 1,024 GPUs refill
    /// a few groups over 65-256 resources, where the heap's queuing cost more than a scan
    /// (bench/flow_scale_driver.cpp, skewed: 5,411 -> 5,153 instructions per event).
    static constexpr std::size_t kScanWork = 8192;

    /// Recomputes the rates that the changes since the last call can move. Calls
    /// `before(resource)` for each resource whose load may change, before it changes, then
    /// `changed(flow)` for each flow whose rate changed by more than kTolerance (new flows
    /// included), in a fixed order.
    template <class Before, class Changed>
    void solve(Before&& before, Changed&& changed) {
        compute();
        for (std::uint32_t r : m_touched) before(r);
        commit_loads();
        const std::uint32_t stamp = std::uint32_t(m_solves);
        for (std::uint32_t g : m_set)
            if (m_rate[g] != m_groups[g].old_rate)
                for (std::uint32_t f : m_group_flows[g]) {
                    m_reported[f] = stamp;
                    changed(f);
                }
        // A flow that joined a group whose rate held still needs its rate told.
        for (std::uint32_t f : m_new_flows)
            if (m_group_of[f] != kNone && m_reported[f] != stamp) {
                m_reported[f] = stamp;
                changed(f);
            }
        m_new_flows.clear();
    }

    /// Solves that refilled a whole component larger than the small one (a fallback, or all of
    /// them without set_incremental).
    std::uint64_t full_solves() const { return m_full_solves; }
    /// Solves so far.
    std::uint64_t solves() const { return m_solves; }
    /// Progressive fills so far (a solve's settling of served-first loads takes several).
    std::uint64_t fills() const { return m_fills; }
    /// Groups of identical flows active now (each flow is in exactly one).
    std::size_t groups() const { return m_active; }

private:
    static constexpr std::uint32_t kNone = std::numeric_limits<std::uint32_t>::max();
    // A resource's member is a group, with the group's weight on it (count x a flow's weight, a
    // copy of the group's Uses entry): the passes over a resource's members then read the group's
    // record only, not also its use list, one cache miss fewer per member.
    // (A copy of the group's rate here too was measured and dropped: 24-byte members cost the
    // member passes more misses than the group records they spared; bench/RESULTS.md.)
    struct Member {
        std::uint32_t group;
        std::uint32_t use : 30;    // index into the group's uses
        std::uint32_t first : 1;   // served first (Use::first)
        std::uint32_t tagged : 1;  // the group's flows are tagged (add_flow): its load counts apart too
        double weight;             // the group's weight on this resource (= its uses[use].total)
    };
    // What fill() reads and writes of a resource, in one cache line (alignas): the fill visits
    // some 30 resources per solve, scattered over all of them (thousands at scale), and the
    // record of 88 bytes it replaced straddled two lines. Its load and what measure() finds are
    // kept apart (m_load, m_measured): fill() needs neither.
    struct alignas(64) Resource {
        double capacity;
        std::vector<Member> members;  // the groups on it
        // scratch of one solve
        double remaining = 0, weights = 0;  // capacity left to the unfrozen set groups, and their weight
        std::uint32_t unfrozen = 0;
        std::uint32_t pushed = 0;           // fill step that last moved it
        double queued = 0;                  // the level of its last entry in the fill's heap
    };
    struct Measured {  // a touched resource after a fill
        double load = 0, top = 0;  // its load and highest rate
        double tagged = 0;         // the tagged flows' part of its load
    };
    struct Uses {
        std::uint32_t resource;
        std::uint32_t position : 31;  // this group's place in the resource's member list
        std::uint32_t first : 1;      // served first (Use::first)
        double weight;                // one flow's weight
        double total;                 // the group's: weight x count
    };
    // A group's uses are kept inline, in its record, up to kInlineUses (the flows of
    // bench/flow_scale_driver.cpp's switch have 4 or 9 uses, those of a 64-GPU all-reduce on
    // mi300x-rail 2, 5, 8 or 17); a group with more keeps them all in m_spill. The fill's freeze loop,
    // add_to_set and remove_flow then find a group's uses in the record they read anyway, not
    // behind a second pointer (another cache miss each at scale). The record is 4 cache lines
    // (alignas: it starts one); its first holds the state and the first uses.
    static constexpr std::uint32_t kInlineUses = 9;
    struct alignas(64) Group {
        double old_rate = 0;               // its rate (m_rate) before this solve
        std::uint32_t count = 0;           // its flows
        std::uint32_t size = 0;            // its uses
        bool active = false, frozen = false;
        bool first = false;                // has uses served first
        bool tagged = false;               // its flows are tagged (add_flow)
        bool coupled = false;              // its flows are coupled (add_coupled_flow); its key is their couple key
        Uses local[kInlineUses];           // its uses, when they fit
    };
    // A group's uses, wherever they are kept.
    struct UseList {
        Uses* first;
        Uses* last;
        Uses* begin() const { return first; }
        Uses* end() const { return last; }
        std::size_t size() const { return std::size_t(last - first); }
        Uses& operator[](std::size_t i) const { return first[i]; }
    };
    UseList uses(std::uint32_t id) {
        Group& g = m_groups[id];
        Uses* first = g.size <= kInlineUses ? g.local : m_spill[id].data();
        return UseList{first, first + g.size};
    }
    struct Entry {  // a resource's fill level in the fill's heap
        double level;
        std::uint32_t resource;
    };
    // The fill's heap is a min-heap on (level, resource): ties go to the lower index, so the order
    // of a fill does not depend on the order in which levels were queued.
    struct LaterEntry {
        bool operator()(const Entry& a, const Entry& b) const {
            return a.level > b.level || (a.level == b.level && a.resource > b.resource);
        }
    };

    std::uint32_t find_group(const std::vector<Use>& uses, std::uint64_t key, bool tagged);
    void make_room(std::uint32_t id);
    // `indexed`: findable by its uses (find_group); a coupled group is not.
    std::uint32_t new_group(const std::vector<Use>& uses, std::uint64_t key, bool tagged, bool indexed = true);
    void set_count(std::uint32_t group, std::uint32_t count);
    void drop_group(std::uint32_t group);
    void build_coupled(std::uint64_t couple, bool tagged, double rate);
    double dissolve_coupled(std::uint64_t couple, std::uint32_t leaving);
    void remove_coupled(std::uint32_t id);
    void compute();
    void add_to_set(std::uint32_t group);
    void touch(std::uint32_t resource);
    bool settle();
    void fill();
    void fill_by_heap(std::size_t unfrozen);
    void queue(std::uint32_t resource, double level);
    /// The common rate at which the unfrozen groups of S on `r` would fill it.
    static double level_of(const Resource& r) { return std::max(0.0, r.remaining) / r.weights; }
    void fill_by_scan(std::size_t unfrozen);
    bool solve_levels();
    bool solve_levels_directly();
    void snap_levels();
    bool adopt_levels();
    template <class Changed>
    void freeze(std::uint32_t full, double level, std::size_t& unfrozen, Changed&& changed);
    void measure();
    bool check();
    void start();
    void seed();
    bool collect_component(std::size_t limit);
    bool past_whole(std::uint64_t work) const;
    bool dearer_than_whole(std::uint64_t work, int steps) const;
    void commit_loads();

    std::vector<Resource> m_resources;
    std::vector<double> m_load;           // per resource: its load (the sum of rate x weight of its flows)
    std::vector<double> m_tagged_load;    // per resource: the tagged flows' part of m_load
    std::vector<Measured> m_measured;     // per resource: of the last measure() that touched it
    std::vector<Group> m_groups;
    std::vector<std::vector<Uses>> m_spill;                 // per group: its uses when more than kInlineUses
    std::vector<std::vector<std::uint32_t>> m_group_flows;  // per group: its flows' ids
    std::vector<std::uint64_t> m_group_key;                 // per group: the hash of its uses (coupled: its couple key)
    std::vector<std::uint32_t> m_free_groups;
    FlatIndex m_index;  // hash of uses -> the group with them
    std::vector<std::uint32_t> m_group_of, m_slot;  // per flow id: its group (kNone: none), its place there
    std::vector<std::uint32_t> m_reported;          // per flow id: the solve that last reported it
    // Coupled flows (add_coupled_flow): each one's own uses, the group of each key, and scratch.
    std::vector<std::vector<Use>> m_flow_uses;
    FlatIndex m_couples;                            // couple key -> its group
    std::vector<std::uint32_t> m_couple_flows;
    std::vector<Use> m_couple_uses;
    // Solve generations, per group (in m_set) and per resource (in m_touched), apart from the
    // records: the walks over members test a mark for every group they pass and a dense array of
    // 4-byte marks stays in cache where 64- and 88-byte records do not (at 512 GPUs).
    std::vector<std::uint32_t> m_group_mark, m_resource_mark;
    // Per group: a flow's rate (every flow of the group has it). Apart from the records for the same
    // reason as the marks: the walks over a resource's members read the rate of every group they
    // pass, and 8 bytes a group stay in cache where 256-byte records do not.
    std::vector<double> m_rate;
    // Per group of S: the rate at which the fill holds its served-first loads (dense, as m_rate).
    std::vector<double> m_estimate;
    std::vector<std::uint32_t> m_bottleneck;  // per group: the resource that froze it in its last fill (dense, as m_rate)
    std::vector<std::uint32_t> m_dirty;       // resources whose groups changed
    std::vector<std::uint32_t> m_new_groups;  // groups created or grown since the last solve
    std::vector<std::uint32_t> m_new_flows;   // flows added since the last solve (each reported)
    std::vector<std::uint32_t> m_set;         // S: the groups being refilled
    std::vector<std::uint32_t> m_touched;     // resources of S and of the change
    std::vector<std::uint32_t> m_joining;     // groups failing the check
    std::vector<Entry> m_heap;
    // solve_levels()'s system: a row per bottleneck of the last fill, in its order.
    struct Term {  // a group's weight on the row's resource, at the level of the bottleneck in `column`
        std::uint32_t column;
        double weight;
    };
    struct Row {
        double rest, diagonal;     // capacity less the held groups' loads; the weight of its own groups
        std::uint32_t begin, end;  // its terms in m_terms
    };
    std::vector<std::uint32_t> m_order;      // the last fill's bottlenecks, in the order they filled
    std::vector<double> m_level;             // their levels (the rates of the groups they froze)
    std::vector<std::uint32_t> m_order_pos;  // per resource: its place in m_order, where it is there
    std::vector<Term> m_terms;
    std::vector<Row> m_rows;
    std::vector<std::uint32_t> m_snap;       // snap_levels()' order of the levels
    std::vector<double> m_dense;             // solve_levels_directly()'s system, row by row
    std::vector<std::uint32_t> m_requeue;  // resources whose level a fill step moved
    std::uint32_t m_generation = 0, m_step = 0;
    std::size_t m_active = 0;  // active groups
    bool m_incremental = true;
    bool m_backoff_on = true;
    // An attempt that fails makes the next 1, 2, 4 .. kMaxBackoff solves skip it; one that pays
    // resets that to 1.
    struct Backoff {
        std::uint32_t next = 1, skip = 0;  // next back-off length; solves left to skip
        bool skipping() {
            if (skip == 0) return false;
            --skip;
            return true;
        }
        void paid() { next = 1; }
        void wasted() {
            skip = next;
            next = std::min(2 * next, kMaxBackoff);
        }
    };
    Backoff m_refill_whole;  // the incremental attempts (skipped: refill the whole component)
    Backoff m_look;          // the look for a small component (skipped: straight to the incremental path)
    std::size_t m_small_component = kSmallComponent;
    std::size_t m_scan_fill = kScanFill, m_scan_work = kScanWork;
    std::uint64_t m_full_solves = 0, m_solves = 0, m_fills = 0;
    // Members walked by component walks, fills, measures and checks: what a solve's path cost, to compare the two.
    std::uint64_t m_work = 0;
    double m_whole_work = -1;  // running mean of a whole refill's work (< 0: none yet)
};

}  // namespace eidola
