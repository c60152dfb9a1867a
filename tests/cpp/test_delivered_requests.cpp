// DeliveredRequests gives back each answered request's source, whatever order the targets answer
// in (and find() gives it without forgetting it), checked against a plain map over a long random
// run. Why a test of its own: the fabrics' routing of every response depends on it, and its fast
// path (the oldest request of the port) and its holes (requests answered out of order) are easy
// to get subtly wrong; a response sent to the wrong GPU would only show as a stall somewhere else.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <utility>
#include <map>
#include <random>
#include <vector>

#include "eidola/delivered_requests.h"

using namespace eidola;

int main() {
    constexpr std::uint32_t kPorts = 5;
    DeliveredRequests delivered(kPorts);
    std::vector<std::vector<std::uintptr_t>> pending(kPorts);  // per port, in delivery order
    // What each port's ring should hold: the requests from its oldest to its newest unanswered
    // one, in delivery order, with those answered in between still in place (true: unanswered).
    std::vector<std::deque<std::pair<std::uintptr_t, bool>>> span(kPorts);
    std::map<std::uintptr_t, std::uint32_t> source;           // the reference
    std::mt19937_64 rng(7);
    std::uintptr_t next = 0x1000;
    std::uint64_t checks = 0, failures = 0;
    auto fail = [&](const char* what, std::uint32_t port) {
        if (++failures <= 10) std::printf("FAIL: %s (port %u)\n", what, port);
    };
    for (int step = 0; step < 400000; ++step) {
        const std::uint32_t port = std::uint32_t(rng() % kPorts);
        std::vector<std::uintptr_t>& q = pending[port];
        // Up to 300 requests in flight per port (near it most of the time), so rings grow and wrap.
        const bool deliver = q.empty() || (q.size() < 300 && rng() % 100 < 52);
        if (deliver) {
            const std::uintptr_t t = next;
            next += 64;
            const std::uint32_t src = std::uint32_t(rng() % 1000);
            delivered.delivered(port, reinterpret_cast<const void*>(t), src);
            q.push_back(t);
            source[t] = src;
            span[port].emplace_back(t, true);
            continue;
        }
        // Mostly the oldest; sometimes the newest (answered at once) or one in the middle.
        const std::uint64_t pick = rng() % 100;
        const std::size_t i = pick < 80 ? 0 : pick < 90 ? q.size() - 1 : std::size_t(rng() % q.size());
        const std::uintptr_t t = q[i];
        q.erase(q.begin() + std::ptrdiff_t(i));
        std::uint32_t src = ~0u;
        ++checks;
        // find() gives the same source and forgets nothing.
        const std::uint32_t held = delivered.held(port);
        if (!delivered.find(port, reinterpret_cast<const void*>(t), src) || src != source[t])
            fail("find() missed a delivered request", port);
        if (delivered.held(port) != held) fail("find() changed the ring", port);
        src = ~0u;
        if (!delivered.answered(port, reinterpret_cast<const void*>(t), src)) fail("a delivered request not found", port);
        else if (src != source[t]) fail("wrong source", port);
        source.erase(t);
        std::deque<std::pair<std::uintptr_t, bool>>& ends = span[port];
        for (auto& e : ends)
            if (e.first == t) e.second = false;
        while (!ends.empty() && !ends.front().second) ends.pop_front();
        while (!ends.empty() && !ends.back().second) ends.pop_back();
        if (delivered.held(port) != ends.size()) fail("the ring holds more than its oldest to its newest request", port);
        // Answered, it is found no more, on its port or another.
        if (delivered.answered(port, reinterpret_cast<const void*>(t), src)) fail("an answered request found again", port);
        if (delivered.find(port, reinterpret_cast<const void*>(t), src)) fail("find() found an answered request", port);
        if (delivered.answered((port + 1) % kPorts, reinterpret_cast<const void*>(t), src))
            fail("a request found on a port it was not sent to", port);
    }
    // Drain: every request still pending is found, answered in a random order.
    for (std::uint32_t port = 0; port < kPorts; ++port) {
        std::shuffle(pending[port].begin(), pending[port].end(), rng);
        for (std::size_t k = pending[port].size(); k-- > 0;) {
            std::uint32_t src = ~0u;
            ++checks;
            if (!delivered.answered(port, reinterpret_cast<const void*>(pending[port][k]), src) ||
                src != source[pending[port][k]])
                fail("draining", port);
        }
    }
    for (std::uint32_t port = 0; port < kPorts; ++port)
        if (delivered.held(port)) fail("entries left after every request was answered", port);
    std::printf("%llu answers checked, %llu failures\n", (unsigned long long)checks, (unsigned long long)failures);
    return failures ? 1 : 0;
}
