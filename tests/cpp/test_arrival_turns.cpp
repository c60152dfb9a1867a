// ArrivalTurns (arrival_turns.h) orders the requests that reach GPU ports in one picosecond: by target, then
// round robin over their sources from each target's turn, a request of each source a round, one source's requests
// in the order they came; each target's turn moves past the last source it took. Every expected order below is
// worked out by hand beside it.
#include <cstdint>
#include <cstdio>
#include <vector>

#include "eidola/arrival_turns.h"

using namespace eidola;

namespace {

struct Request {
    std::uint32_t target, source, tag;  // tag: which request, to check the order
};

int failures = 0;

void expect_tags(const std::vector<Request>& got, const std::vector<std::uint32_t>& tags, const char* what) {
    bool same = got.size() == tags.size();
    for (std::size_t i = 0; same && i < tags.size(); ++i) same = got[i].tag == tags[i];
    if (same) return;
    ++failures;
    std::printf("FAIL %s: got", what);
    for (const Request& r : got) std::printf(" %u", r.tag);
    std::printf(", expected");
    for (std::uint32_t t : tags) std::printf(" %u", t);
    std::printf("\n");
}

// One scratch for every call, as PortTurns keeps it. It goes in holding a stray request, which must not reach the
// result, and must come back empty (PortTurns delivers from it next).
std::vector<Request> scratch;

void order(ArrivalTurns& turns, std::vector<Request>& batch) {
    scratch.push_back({0, 0, 99});
    turns.order(batch, scratch, [](const Request& r) { return r.target; }, [](const Request& r) { return r.source; });
    if (!scratch.empty()) {
        ++failures;
        std::printf("FAIL the scratch came back holding %zu requests\n", scratch.size());
    }
    scratch.clear();
}

}  // namespace

int main() {
    ArrivalTurns turns(8);
    // Target 3's turn starts at source 4, so ranks are (s - 4) mod 8: source 5 -> 1, 6 -> 2, 0 -> 4, 1 -> 5.
    // Source 1's two requests keep their order (tags 1, then 4).
    std::vector<Request> batch = {{3, 0, 0}, {3, 1, 1}, {3, 5, 2}, {3, 6, 3}, {3, 1, 4}};
    order(turns, batch);
    expect_tags(batch, {2, 3, 0, 1, 4}, "target 3 from its turn at source 4");
    // It took source 1 last, so its turn is now source 2: ranks 2 -> 0, 5 -> 3, 0 -> 6, 1 -> 7.
    batch = {{3, 0, 0}, {3, 1, 1}, {3, 2, 2}, {3, 5, 3}};
    order(turns, batch);
    expect_tags(batch, {2, 3, 0, 1}, "target 3's turn moved past source 1");
    // By target first. Target 1's turn is source 2: source 2 -> rank 0, source 0 -> rank 6.
    batch = {{1, 0, 0}, {0, 1, 1}, {1, 2, 2}};
    order(turns, batch);
    expect_tags(batch, {1, 2, 0}, "by target, then each target's turn");
    // A source outside the ports (an NVLS unit's own access) goes last and leaves the turn alone: target 5's
    // turn is source 6, so 7 -> rank 1, 2 -> rank 4, 8 -> last; afterwards the turn is source 3 (after 2).
    batch = {{5, 8, 0}, {5, 2, 1}, {5, 7, 2}};
    order(turns, batch);
    expect_tags(batch, {2, 1, 0}, "a source outside the ports last");
    batch = {{5, 2, 0}, {5, 3, 1}};
    order(turns, batch);
    expect_tags(batch, {1, 0}, "target 5's turn after source 2, not after the outside source");
    // Two trains to one target are taken interleaved, a request of each source a round: target 2's turn is
    // source 3, so source 0 ranks 5 and source 1 ranks 6; each sent three requests, pushed one train after the
    // other (tags 0-2 from source 0, 3-5 from source 1).
    batch = {{2, 0, 0}, {2, 0, 1}, {2, 0, 2}, {2, 1, 3}, {2, 1, 4}, {2, 1, 5}};
    order(turns, batch);
    expect_tags(batch, {0, 3, 1, 4, 2, 5}, "two trains interleaved");
    // A large batch: 40 requests to target 0 from sources 1, 2, ..., 7, 1, 2, ... in turn (request i from source
    // i mod 7 + 1, so sources 1-5 send six and sources 6 and 7 five). Target 0 took source 1 above, so its turn
    // is source 2: in round r every source from 2 to 7, then 1, gives its r-th request (tag s - 1 + 7 r), and in
    // the sixth round sources 2-5 and then 1 give their last (tags 36-39, then 35).
    batch.clear();
    for (std::uint32_t i = 0; i < 40; ++i) batch.push_back({0, i % 7 + 1, i});
    order(turns, batch);
    std::vector<std::uint32_t> expected;
    for (std::uint32_t r = 0; r < 6; ++r)
        for (std::uint32_t s : {2u, 3u, 4u, 5u, 6u, 7u, 1u})
            if (s - 1 + 7 * r < 40) expected.push_back(s - 1 + 7 * r);
    expect_tags(batch, expected, "a large batch, in rounds");
    // A single request still moves its target's turn: target 0 took source 1 last (turn 2), so a lone request
    // from 6 makes its turn 7, and then 7 goes before 6.
    batch = {{0, 6, 0}};
    order(turns, batch);
    batch = {{0, 6, 0}, {0, 7, 1}};
    order(turns, batch);
    expect_tags(batch, {1, 0}, "a single request moves the turn");
    if (failures) return 1;
    std::printf("arrival turns: all orders as worked out\n");
    return 0;
}
