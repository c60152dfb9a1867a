// LevelHeap pops (level, resource) exactly as an ordered std::set of the same entries does, over
// long random runs of the fill's operations: entries added and built at once, the top raised,
// entries lowered where they stand or added afresh, pops, and resets between runs. Why a test of
// its own: the flow solver's rates depend on the order of its fill's steps, and a 4-ary heap that
// moves entries in place is easy to get subtly wrong (a stale place index, a child group cut short
// at the end of the array) in ways that still pop a plausible order. Levels are drawn from a few
// values, so ties are broken by the resource number, as the fill needs.
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "eidola/level_heap.h"

using eidola::LevelHeap;

namespace {

std::uint64_t run(std::uint64_t seed, std::uint32_t resources, int levels, std::uint64_t& checks) {
    std::mt19937_64 rng(seed);
    LevelHeap heap;
    std::uint64_t failures = 0;
    auto level = [&] { return double(rng() % levels) / 4; };
    for (int round = 0; round < 200; ++round) {
        std::set<std::pair<double, std::uint32_t>> reference;
        std::map<std::uint32_t, double> key;  // resource -> its entry's level
        heap.reset(resources);
        for (std::uint32_t r = 0; r < resources; ++r)
            if (rng() % 3) {
                const double l = level();
                heap.add(l, r);
                reference.emplace(l, r);
                key[r] = l;
            }
        heap.build();
        while (!reference.empty()) {
            ++checks;
            if (heap.empty()) {
                std::printf("FAIL seed %llu round %d: heap empty, %zu entries expected\n",
                            (unsigned long long)seed, round, reference.size());
                return failures + 1;
            }
            const auto want = *reference.begin();
            const LevelHeap::Entry got = heap.top();
            if (got.level != want.first || got.resource != want.second) {
                std::printf("FAIL seed %llu round %d: top (%g, %u), want (%g, %u)\n", (unsigned long long)seed, round,
                            got.level, got.resource, want.first, want.second);
                ++failures;
                break;
            }
            switch (rng() % 4) {
                case 0: {  // out of date: the top moves up
                    const double up = want.first + double(1 + rng() % levels) / 4;
                    heap.raise_top(up);
                    reference.erase(reference.begin());
                    reference.emplace(up, want.second);
                    key[want.second] = up;
                    break;
                }
                case 1: {  // any resource lowered: moved where it has an entry, added where it has none
                    const std::uint32_t r = std::uint32_t(rng() % resources);
                    const auto k = key.find(r);
                    const double down = k == key.end() ? level() : k->second - double(rng() % 3) / 4;
                    if (k != key.end()) reference.erase({k->second, r});
                    heap.lower(r, down);
                    reference.emplace(down, r);
                    key[r] = down;
                    break;
                }
                default:  // frozen: taken out
                    heap.pop();
                    reference.erase(reference.begin());
                    key.erase(want.second);
            }
        }
        if (!heap.empty()) {
            std::printf("FAIL seed %llu round %d: the heap holds entries the reference does not\n",
                        (unsigned long long)seed, round);
            ++failures;
        }
    }
    return failures;
}

}  // namespace

int main() {
    std::uint64_t failures = 0, checks = 0;
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
        failures += run(seed, 1, 3, checks);     // a single entry
        failures += run(seed, 5, 2, checks);     // partial child groups, many ties
        failures += run(seed, 64, 4, checks);    // ties broken by the resource
        failures += run(seed, 300, 1000, checks);
    }
    std::printf("%llu tops checked, %llu failures\n", (unsigned long long)checks, (unsigned long long)failures);
    return failures ? 1 : 0;
}
