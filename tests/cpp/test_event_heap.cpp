// EventHeap pops in exactly (time, push order), checked against a plain binary heap over a long
// random schedule. Why a test of its own: EventHeap trades the heap for lanes, a now lane and
// cached times, and every model's results depend on its order being exactly that of a heap. A
// separate program because SystemC elaborates once per process.
#include <cstdint>
#include <cstdio>
#include <functional>
#include <queue>
#include <random>
#include <utility>
#include <vector>

#include <systemc>

#include "eidola/event_heap.h"

using namespace eidola;

namespace {

using Ref = std::pair<std::uint64_t, std::uint64_t>;  // (time, push number)

/// Pushes random actions into its own heap, and into a peer's heap from outside the peer's run.
struct Scheduler : sc_core::sc_module {
    EventHeap<std::uint64_t> heap;
    std::priority_queue<Ref, std::vector<Ref>, std::greater<Ref>> reference;
    Scheduler* peer = nullptr;
    std::mt19937_64 rng;
    std::uint64_t pushed = 0, popped = 0, mismatches = 0, budget;

    Scheduler(sc_core::sc_module_name name, std::uint64_t seed, std::uint64_t budget)
        : sc_module(name), heap(this, [](void* s) { static_cast<Scheduler*>(s)->run(); }), rng(seed), budget(budget) {
        for (int i = 0; i < 50; ++i) push(offset());
    }

    // Offsets like the models': now, a few fixed latencies (in-order lanes), and anything.
    std::uint64_t offset() {
        switch (rng() % 6) {
            case 0: case 1: return 0;
            case 2: return 500;
            case 3: return 48;
            case 4: return 1000 + rng() % 64;
            default: return rng() % 5000;
        }
    }

    void push(std::uint64_t delay) {
        const std::uint64_t at = now_ps() + delay;
        reference.emplace(at, pushed);
        heap.push(at, pushed++);
    }

    void run() {
        const std::uint64_t now = now_ps();
        std::uint64_t id;
        while (heap.pop_due(now, id)) {
            const Ref want = reference.top();
            reference.pop();
            if (want.first != now || want.second != id) ++mismatches;
            ++popped;
            for (int n = int(rng() % 3); n > 0 && pushed < budget; --n) push(offset());
            if (peer && rng() % 4 == 0 && peer->pushed < peer->budget) peer->push(peer->offset());
        }
        heap.rearm(now);
    }
};

}  // namespace

int sc_main(int, char**) {
    Scheduler a("a", 1, 200000), b("b", 2, 200000);
    a.peer = &b;
    b.peer = &a;
    sc_core::sc_start();
    int failures = 0;
    for (const Scheduler* s : {&a, &b}) {
        const bool ok = s->mismatches == 0 && s->popped == s->pushed && s->reference.empty();
        std::printf("%s: %s: %llu pushed, %llu popped, %llu out of order\n", ok ? "ok  " : "FAIL", s->name(),
                    (unsigned long long)s->pushed, (unsigned long long)s->popped, (unsigned long long)s->mismatches);
        failures += ok ? 0 : 1;
    }
    return failures;
}
