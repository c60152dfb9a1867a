// FlatIndex finds, adds and drops keys exactly as a std::map does, over a long random run. Why a
// test of its own: the calendar's buckets and the flow solver's groups are found through it, and
// its removal (a backward shift of the probe run) is easy to get subtly wrong: a key moved past
// its home, or left behind a hole, is silently not found, and the models would then book a second
// bucket for a time or a second group for a set of uses. Keys are drawn from a small range
// (long probe runs, wrap-around at the array's end) and from the whole 64-bit range.
#include <cstdint>
#include <cstdio>
#include <map>
#include <random>
#include <vector>

#include "eidola/flat_index.h"

using namespace eidola;

namespace {

std::uint64_t run(std::uint64_t key_range, std::uint64_t seed, std::uint64_t& checks) {
    FlatIndex index;
    std::map<std::uint64_t, std::uint32_t> reference;
    std::vector<std::uint64_t> keys;  // keys added at some time, present or not
    std::mt19937_64 rng(seed);
    std::uint64_t failures = 0;
    auto key = [&] {
        if (!keys.empty() && rng() % 2) return keys[rng() % keys.size()];
        const std::uint64_t k = key_range ? rng() % key_range : rng();
        keys.push_back(k);
        return k;
    };
    for (std::uint32_t step = 0; step < 400000; ++step) {
        const std::uint64_t k = key();
        const auto it = reference.find(k);
        switch (rng() % 3) {
            case 0: {  // insert: a present key keeps its value
                const bool added = index.insert(k, step);
                if (added != (it == reference.end())) ++failures;
                if (added) reference.emplace(k, step);
                break;
            }
            case 1:
                index.erase(k);
                if (it != reference.end()) reference.erase(it);
                break;
            default:
                if (index.find(k) != (it == reference.end() ? FlatIndex::kAbsent : it->second)) ++failures;
        }
        ++checks;
        if (index.size() != reference.size()) ++failures;
        // Every key present now is found, with its value (a moved key must still be reachable).
        if (step % 4096 == 0)
            for (const auto& [rk, rv] : reference) {
                ++checks;
                if (index.find(rk) != rv) ++failures;
            }
    }
    return failures;
}

}  // namespace

int main() {
    std::uint64_t checks = 0, failures = 0;
    failures += run(3000, 1, checks);  // dense keys, about a thousand present: long runs, many shifts
    failures += run(40, 2, checks);    // a few keys, grown and shrunk around the smallest array
    failures += run(0, 3, checks);     // any 64-bit key, the hash's top bits spread them
    std::printf("FlatIndex: %llu checks, %llu failures\n", (unsigned long long)checks, (unsigned long long)failures);
    return failures == 0 ? 0 : 1;
}
