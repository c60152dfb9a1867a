// EventHeap and TimingWheel pop in exactly (time, push order), checked against a plain binary
// heap over a long random schedule. Why a test of its own: EventHeap trades the heap for lanes, a
// now lane and cached times, TimingWheel for buckets and a heap of far actions, and every model's
// results depend on their order being exactly that of a heap. Also checks the counts EventHeap
// derives instead of keeping (processed(), empty()). EventHeap runs twice: with every kind of
// offset (nearly all of them end in its fallback heap), and with a GPU's mix and a small backlog,
// which must send a good share through the lanes. TimingWheel runs twice too: with every kind of
// offset, and crowded, thousands of actions pending in a few buckets in random order (a flow
// fabric's Finish actions booked again and again), which must send some through its heap because
// their place in a bucket is too deep to walk to, and still pop in exactly that order. A separate
// program because SystemC elaborates once per process.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <random>
#include <type_traits>
#include <utility>
#include <vector>

#include <systemc>

#include "eidola/event_heap.h"
#include "eidola/timing_wheel.h"

using namespace eidola;

namespace {

using Ref = std::pair<std::uint64_t, std::uint64_t>;  // (time, push number)

/// Pushes random actions into its own queue, and into a peer's from outside the peer's run.
template <class Queue>
struct Scheduler : sc_core::sc_module {
    Queue heap;
    std::priority_queue<Ref, std::vector<Ref>, std::greater<Ref>> reference;
    Scheduler* peer = nullptr;  // of the same queue type
    std::mt19937_64 rng;
    std::uint64_t pushed = 0, popped = 0, mismatches = 0, miscounts = 0, budget;

    // Lanes: a GPU's mix for EventHeap's lanes (see offset()), else every kind of offset.
    bool lanes;
    std::uint64_t lane_pushes = 0, heap_pushes = 0;  // of EventHeap's pushes not due now
    // Crowded (TimingWheel): offsets into the 256 ps bucket that starts 4,096 to 8,192 ps ahead, with
    // up to kCrowd actions pending; far_pushes counts those its bounded walk sent to the heap.
    bool crowded;
    static constexpr std::uint64_t kCrowd = 3000;
    std::uint64_t far_pushes = 0;

    Scheduler(sc_core::sc_module_name name, std::uint64_t seed, std::uint64_t budget, bool lanes = false,
              bool crowded = false)
        : sc_module(name), heap(this, [](void* s) { static_cast<Scheduler*>(s)->run(); }), rng(seed), budget(budget),
          lanes(lanes), crowded(crowded) {
        if constexpr (std::is_same_v<Queue, TimingWheel<std::uint64_t>>) heap.set_horizon(5000);
        for (int i = 0; i < 50; ++i) push(offset());
    }

    // Offsets like the models': now, a few fixed latencies (in-order lanes), anything, and times on
    // a coarse grid, near or beyond a timing wheel's horizon (2^8 ps x 4,096 buckets at least), so
    // that actions pushed far ahead meet actions of the same time pushed later.
    // With `lanes`, a GPU's mix instead: fixed latencies, a memory's in-order completions and a
    // few others, nothing far ahead, and (in run()) a backlog kept small, so that lanes drain and
    // refill and most actions go through them rather than the fallback heap.
    std::uint64_t offset() {
        if (crowded) return on_grid(4096, 4096) + rng() % 256;
        if (lanes) {
            switch (rng() % 16) {
                case 0: case 1: case 2: case 3: return 0;
                case 4: case 5: case 6: case 7: return 500;
                case 8: case 9: case 10: return 48;
                case 11: case 12: case 13: return 2000;
                default: return rng() % 5000;
            }
        }
        switch (rng() % 7) {
            case 0: case 1: return 0;
            case 2: return 500;
            case 3: return 48;
            case 4: return 1000 + rng() % 64;
            case 5: return on_grid(rng() % 4 == 0 ? 1000000 + rng() % 3000000 : rng() % 20000, 16384);
            default: return rng() % 5000;
        }
    }
    static std::uint64_t on_grid(std::uint64_t delay, std::uint64_t grid) {
        const std::uint64_t now = now_ps();
        return (now + delay + grid - 1) / grid * grid - now;
    }

    void push(std::uint64_t delay) {
        const std::uint64_t at = now_ps() + delay;
        reference.emplace(at, pushed);
        if constexpr (std::is_same_v<Queue, EventHeap<std::uint64_t>>) {
            const std::size_t before = heap.fallback_size();
            heap.push(at, pushed++);
            if (delay) ++(heap.fallback_size() > before ? heap_pushes : lane_pushes);
        } else {
            const std::size_t before = heap.far_size();
            heap.push(at, pushed++);
            if (heap.far_size() > before) ++far_pushes;
        }
    }
    bool room() const {
        return pushed < budget && (!lanes || pushed - popped < 32) && (!crowded || pushed - popped < kCrowd);
    }

    void run() {
        const std::uint64_t now = now_ps();
        std::uint64_t id;
        while (heap.pop_due(now, id)) {
            const Ref want = reference.top();
            reference.pop();
            if (want.first != now || want.second != id) ++mismatches;
            ++popped;
            if (heap.processed() != popped || heap.empty() != reference.empty()) ++miscounts;
            for (int n = crowded ? 3 : int(rng() % 3); n > 0 && room(); --n) push(offset());
            if (peer && rng() % 4 == 0 && peer->room()) peer->push(peer->offset());
        }
        heap.rearm(now);
    }
};

}  // namespace

template <class Queue>
int report(const Scheduler<Queue>& s) {
    // The GPU mix must exercise the lanes, not only the fallback heap (the other mix sends 99.8% of
    // its later actions there): at least a third of them go to lanes.
    const bool lanes_used = !s.lanes || 2 * s.lane_pushes >= s.heap_pushes;
    // Crowded: every action is within the wheel's horizon, so those in the heap went by the bounded walk; it must
    // have taken some (most, this crowded), and the wheel the rest.
    const bool walk_bounded = !s.crowded || (s.far_pushes > 0 && s.far_pushes < s.pushed);
    const bool ok = s.mismatches == 0 && s.miscounts == 0 && s.popped == s.pushed && s.reference.empty() &&
                    s.heap.empty() && s.heap.processed() == s.popped && lanes_used && walk_bounded &&
                    s.pushed >= s.budget;
    std::printf("%s: %s: %llu pushed, %llu popped, %llu out of order, %llu miscounted", ok ? "ok  " : "FAIL", s.name(),
                (unsigned long long)s.pushed, (unsigned long long)s.popped, (unsigned long long)s.mismatches,
                (unsigned long long)s.miscounts);
    if (s.lanes)
        std::printf(", %llu to lanes, %llu to the fallback heap", (unsigned long long)s.lane_pushes,
                    (unsigned long long)s.heap_pushes);
    if (s.crowded) std::printf(", %llu past the walk to the heap", (unsigned long long)s.far_pushes);
    std::printf("\n");
    return ok ? 0 : 1;
}

int sc_main(int, char**) {
    Scheduler<EventHeap<std::uint64_t>> a("a", 1, 200000), b("b", 2, 200000);
    a.peer = &b;
    b.peer = &a;
    Scheduler<EventHeap<std::uint64_t>> e("gpu_e", 5, 200000, true), f("gpu_f", 6, 200000, true);
    e.peer = &f;
    f.peer = &e;
    Scheduler<TimingWheel<std::uint64_t>> c("wheel_c", 3, 200000), d("wheel_d", 4, 200000);
    c.peer = &d;
    d.peer = &c;
    Scheduler<TimingWheel<std::uint64_t>> g("crowded_g", 7, 200000, false, true);
    sc_core::sc_start();
    return report(a) + report(b) + report(e) + report(f) + report(c) + report(d) + report(g);
}
