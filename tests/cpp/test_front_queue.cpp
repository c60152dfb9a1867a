// FrontQueue holds, reads and drops entries exactly as a std::deque does, over a long random run of
// pushes, pops, inserts in the middle and reads by index. Why a test of its own: it replaced the flow
// fabric's deques (a send rate's history, the output queues' writes and signals, the TLM channels'
// waiting transactions), and its fold (the array shifted down once half of it is popped) is where an
// off-by-one would lose or repeat an entry without any model noticing at once.
#include <cstdint>
#include <cstdio>
#include <deque>
#include <random>

#include "eidola/front_queue.h"

using namespace eidola;

namespace {

// `grow` in 0..9: of ten operations about that many add an entry, so the queue hovers near empty (2), stays
// small (5) or keeps growing (8) and the fold runs at every size.
std::uint64_t run(unsigned grow, std::uint64_t seed, std::uint64_t& checks) {
    FrontQueue<std::uint64_t> queue;
    std::deque<std::uint64_t> reference;
    std::mt19937_64 rng(seed);
    std::uint64_t failures = 0;
    for (std::uint64_t step = 0; step < 200000; ++step) {
        const unsigned op = unsigned(rng() % 10);
        if (op < grow) {
            if (rng() % 4 == 0 && !reference.empty()) {  // insert before a random entry
                const std::size_t at = std::size_t(rng() % (reference.size() + 1));
                const std::uint64_t* placed = queue.insert(queue.begin() + at, step);
                reference.insert(reference.begin() + std::ptrdiff_t(at), step);
                if (placed != queue.begin() + at || *placed != step) ++failures;
            } else {
                queue.push_back(step);
                reference.push_back(step);
            }
        } else if (!reference.empty()) {
            if (queue.front() != reference.front()) ++failures;
            queue.pop_front();
            reference.pop_front();
        }
        ++checks;
        if (queue.size() != reference.size() || queue.empty() != reference.empty()) ++failures;
        if (!reference.empty()) {
            const std::size_t i = std::size_t(rng() % reference.size());
            if (queue[i] != reference[i] || queue.back() != reference.back() ||
                std::size_t(queue.end() - queue.begin()) != reference.size())
                ++failures;
        }
        if (step % 1024 == 0) {  // every entry, in order, through the iterators
            std::size_t i = 0;
            for (std::uint64_t v : queue) failures += v != reference[i++];
            checks += i;
        }
    }
    return failures;
}

}  // namespace

int main() {
    std::uint64_t checks = 0, failures = 0;
    failures += run(2, 1, checks);
    failures += run(5, 2, checks);
    failures += run(6, 3, checks);
    failures += run(8, 4, checks);
    std::printf("FrontQueue: %llu checks, %llu failures\n", (unsigned long long)checks, (unsigned long long)failures);
    return failures == 0 ? 0 : 1;
}
