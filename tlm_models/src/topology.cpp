#include "eidola/topology.h"

#include <cmath>
#include <deque>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace eidola {

namespace {

std::uint32_t squarest_x(std::uint32_t n) {
    std::uint32_t x = std::uint32_t(std::sqrt(double(n)));
    while (x > 1 && n % x) --x;
    return n / x;  // the larger factor along x
}

}  // namespace

Topology::Topology(const TopologySpec& spec) : m_gpus(spec.gpus), m_nodes(spec.gpus) {
    if (spec.gpus == 0) throw std::invalid_argument("topology: needs at least one GPU");
    const std::string& k = spec.kind;
    if (k == "fully_connected") {
        m_out.resize(m_nodes);
        m_in.resize(m_nodes);
        for (std::uint32_t a = 0; a < m_gpus; ++a)
            for (std::uint32_t b = 0; b < m_gpus; ++b)
                if (a != b) add_link(a, b, spec.link);
        route_shortest();
    } else if (k == "switch") {
        m_nodes = m_gpus + 1;
        m_out.resize(m_nodes);
        m_in.resize(m_nodes);
        for (std::uint32_t g = 0; g < m_gpus; ++g) {
            add_link(g, m_gpus, spec.link);
            add_link(m_gpus, g, spec.link);
        }
        route_shortest();
    } else if (k == "ring") {
        build_ring(spec);
    } else if (k == "mesh2d" || k == "torus2d") {
        build_grid(spec, k == "torus2d");
    } else if (k == "hierarchical") {
        const std::uint32_t per = spec.gpus_per_node;
        if (per == 0 || m_gpus % per)
            throw std::invalid_argument("topology: hierarchical needs the GPU count (" + std::to_string(m_gpus) +
                                        ") to be a multiple of gpus_per_node (" + std::to_string(per) + ")");
        const std::uint32_t node_count = m_gpus / per;
        const bool switched = spec.intra == "switch";
        // Nodes: GPUs, then per node an intra-node switch (if switched) and a leaf, then the spines.
        const std::uint32_t first_intra = m_gpus;
        const std::uint32_t first_leaf = first_intra + (switched ? node_count : 0);
        const std::uint32_t first_spine = first_leaf + node_count;
        m_nodes = first_spine + spec.spines;
        m_out.resize(m_nodes);
        m_in.resize(m_nodes);
        for (std::uint32_t n = 0; n < node_count; ++n) {
            for (std::uint32_t i = 0; i < per; ++i) {
                const std::uint32_t g = n * per + i;
                add_intra_links(n, i, per, switched ? std::int64_t(first_intra + n) : -1, spec.link);
                add_link(g, first_leaf + n, spec.nic);
                add_link(first_leaf + n, g, spec.nic);
            }
            for (std::uint32_t s = 0; s < spec.spines; ++s) {
                add_link(first_leaf + n, first_spine + s, spec.network);
                add_link(first_spine + s, first_leaf + n, spec.network);
            }
        }
        route_shortest();
    } else if (k == "rail") {
        build_rail(spec);
    } else if (k == "custom") {
        build_custom(spec);
    } else {
        throw std::invalid_argument("topology: unknown kind '" + k + "'");
    }
}

void Topology::add_intra_links(std::uint32_t n, std::uint32_t i, std::uint32_t per, std::int64_t intra_switch,
                               const LinkParams& link) {
    const std::uint32_t g = n * per + i;
    if (intra_switch >= 0) {
        add_link(g, std::uint32_t(intra_switch), link);
        add_link(std::uint32_t(intra_switch), g, link);
    } else {
        for (std::uint32_t j = 0; j < per; ++j)
            if (i != j) add_link(g, n * per + j, link);
    }
}

std::uint32_t Topology::add_link(std::uint32_t src, std::uint32_t dst, const LinkParams& p, std::int8_t dim, bool wrap) {
    const std::uint32_t index = std::uint32_t(m_links.size());
    m_links.push_back(TopoLink{src, dst, p.bytes_per_s, p.latency_ps, p.header, p.lanes == 0 ? 1 : p.lanes, dim, wrap});
    m_out[src].push_back(index);
    m_in[dst].push_back(index);
    return index;
}

void Topology::build_ring(const TopologySpec& spec) {
    m_out.resize(m_nodes);
    m_in.resize(m_nodes);
    const std::uint32_t n = m_gpus;
    for (std::uint32_t a = 0; n > 1 && a < n; ++a) {
        add_link(a, (a + 1) % n, spec.link, 0, a == n - 1);
        if (spec.bidirectional && n > 2) add_link((a + 1) % n, a, spec.link, 0, a == n - 1);
    }
    route_dimension_order(n, 1, true, spec.bidirectional);
}

void Topology::build_grid(const TopologySpec& spec, bool torus) {
    std::uint32_t x, y;
    if (spec.dims.empty()) {
        x = squarest_x(m_gpus);
        y = m_gpus / x;
    } else if (spec.dims.size() == 2) {
        x = spec.dims[0];
        y = spec.dims[1];
    } else {
        throw std::invalid_argument("topology: dims needs two sizes [x, y]");
    }
    if (std::uint64_t(x) * y != m_gpus)
        throw std::invalid_argument("topology: dims " + std::to_string(x) + " x " + std::to_string(y) +
                                    " do not match " + std::to_string(m_gpus) + " GPUs");
    m_out.resize(m_nodes);
    m_in.resize(m_nodes);
    auto id = [x](std::uint32_t i, std::uint32_t j) { return j * x + i; };
    for (std::uint32_t j = 0; j < y; ++j)
        for (std::uint32_t i = 0; i < x; ++i) {
            // +x and -x neighbours; the torus wraps, and its wrap links are the datelines.
            if (i + 1 < x || (torus && x > 2)) {
                const bool wrap = i + 1 == x;
                add_link(id(i, j), id((i + 1) % x, j), spec.link, 0, wrap);
                add_link(id((i + 1) % x, j), id(i, j), spec.link, 0, wrap);
            } else if (torus && x == 2 && i == 0) {
                add_link(id(0, j), id(1, j), spec.link, 0, false);
                add_link(id(1, j), id(0, j), spec.link, 0, false);
            }
            if (j + 1 < y || (torus && y > 2)) {
                const bool wrap = j + 1 == y;
                add_link(id(i, j), id(i, (j + 1) % y), spec.link, 1, wrap);
                add_link(id(i, (j + 1) % y), id(i, j), spec.link, 1, wrap);
            } else if (torus && y == 2 && j == 0) {
                add_link(id(i, 0), id(i, 1), spec.link, 1, false);
                add_link(id(i, 1), id(i, 0), spec.link, 1, false);
            }
        }
    route_dimension_order(x, y, torus, true);
}

void Topology::build_custom(const TopologySpec& spec) {
    m_nodes = m_gpus + spec.switches;
    m_out.resize(m_nodes);
    m_in.resize(m_nodes);
    auto node = [&](const std::string& token) -> std::uint32_t {
        std::uint64_t v;
        if (!token.empty() && token[0] == 's') {
            v = std::stoull(token.substr(1));
            if (v >= spec.switches)
                throw std::invalid_argument("topology: edge names switch '" + token + "' but there are " +
                                            std::to_string(spec.switches) + " switches");
            return m_gpus + std::uint32_t(v);
        }
        v = std::stoull(token);
        if (v >= m_gpus) throw std::invalid_argument("topology: edge names GPU " + token + " of " + std::to_string(m_gpus));
        return std::uint32_t(v);
    };
    std::stringstream all(spec.edges);
    std::string edge;
    while (std::getline(all, edge, ';')) {
        std::stringstream fields(edge);
        std::string src, dst, bw, lat, header, lanes;
        if (!(fields >> src >> dst >> bw >> lat >> header >> lanes)) continue;
        LinkParams p = spec.link;
        if (bw != "-") p.bytes_per_s = std::stod(bw);
        if (lat != "-") p.latency_ps = std::uint64_t(std::llround(std::stod(lat) * 1e12));
        if (header != "-") p.header = std::uint32_t(std::stoul(header));
        if (lanes != "-") p.lanes = std::uint32_t(std::stoul(lanes));
        add_link(node(src), node(dst), p);
    }
    route_shortest();
    // Every GPU may address every other (the address map has a window for each), so a GPU another cannot reach
    // is a mistake in the edges, named here rather than when the first transaction finds no route mid-run.
    for (std::uint32_t src = 0; src < m_gpus; ++src)
        for (std::uint32_t dst = 0; dst < m_gpus; ++dst)
            if (src != dst && m_route_count[std::size_t(src) * m_gpus + dst] == 0)
                throw std::invalid_argument("topology: custom.edges give no path from gpu" + std::to_string(src) +
                                            " to gpu" + std::to_string(dst) + " (every GPU must reach every other; " +
                                            std::to_string(m_links.size()) + " links given)");
}

// Rail-optimised: nodes of gpus_per_node GPUs (fully connected or on a switch), each node with
// `nics` NICs; GPU i of a node uses NIC floor(i * nics / gpus_per_node) over its own GPU-to-NIC
// (PCIe) link, and NIC r of every node connects to rail switch r; every rail switch connects to
// every spine. Node order: GPUs, the nodes' switches (intra: switch), the NICs (node by node),
// the rail switches, the spines.
void Topology::build_rail(const TopologySpec& spec) {
    const std::uint32_t per = spec.gpus_per_node;
    if (per == 0 || m_gpus % per)
        throw std::invalid_argument("topology: rail needs the GPU count (" + std::to_string(m_gpus) +
                                    ") to be a multiple of rail.gpus_per_node (" + std::to_string(per) + ")");
    const std::uint32_t nics = spec.nics ? spec.nics : per;
    if (nics > per || per % nics)
        throw std::invalid_argument("topology: rail needs nic.count (" + std::to_string(nics) +
                                    ") to divide rail.gpus_per_node (" + std::to_string(per) + ")");
    const std::uint32_t node_count = m_gpus / per;
    const bool switched = spec.intra == "switch";
    m_per = per;
    m_nics = nics;
    m_mtu = spec.nic_mtu;
    m_first_intra = m_gpus;
    m_first_nic = m_first_intra + (switched ? node_count : 0);
    m_first_rail = m_first_nic + node_count * nics;
    m_first_spine = m_first_rail + nics;
    m_nodes = m_first_spine + spec.spines;
    m_out.resize(m_nodes);
    m_in.resize(m_nodes);
    auto framed = [this](std::uint32_t src, std::uint32_t dst, const LinkParams& p) {
        m_links[add_link(src, dst, p)].framed = m_mtu > 0;
    };
    for (std::uint32_t n = 0; n < node_count; ++n) {
        for (std::uint32_t i = 0; i < per; ++i) {
            const std::uint32_t g = n * per + i;
            add_intra_links(n, i, per, switched ? std::int64_t(m_first_intra + n) : -1, spec.link);
            const std::uint32_t nic = m_first_nic + n * nics + i * nics / per;
            add_link(g, nic, spec.pcie);
            add_link(nic, g, spec.pcie);
        }
        for (std::uint32_t r = 0; r < nics; ++r) {
            framed(m_first_nic + n * nics + r, m_first_rail + r, spec.nic);
            m_links.back().nic_out = true;
            framed(m_first_rail + r, m_first_nic + n * nics + r, spec.nic);
        }
    }
    for (std::uint32_t r = 0; r < nics; ++r)
        for (std::uint32_t s = 0; s < spec.spines; ++s) {
            framed(m_first_rail + r, m_first_spine + s, spec.network);
            framed(m_first_spine + s, m_first_rail + r, spec.network);
        }
    route_rail(per, nics, spec.spines, switched, spec.pxn);
}

// Rail routes, by rule rather than by search (a search would send cross-rail traffic through
// other GPUs, which a node's GPU links do not forward): inside a node over its own links; to
// another node through the GPU's NIC to its rail switch, then straight to the destination's NIC
// if it is on the same rail, else up to any spine (the equal-cost choices routing.spread
// spreads over) and down the destination's rail. Without spines, or with `pxn` (NCCL's PXN: the
// library hands the data to the local GPU nearest the NIC the peer uses), cross-rail traffic first
// crosses the source node to the GPU of the destination's rail, which forwards it to its NIC.
void Topology::route_rail(std::uint32_t per, std::uint32_t nics, std::uint32_t spines, bool switched, bool pxn) {
    m_route_first.assign(std::size_t(m_nodes) * m_gpus, 0);
    m_route_count.assign(std::size_t(m_nodes) * m_gpus, 0);
    m_route_links.reserve(std::size_t(m_nodes) * m_gpus + std::size_t(nics) * m_gpus * spines);
    auto link_to = [this](std::uint32_t a, std::uint32_t b) {
        for (std::uint32_t l : m_out[a])
            if (m_links[l].dst == b) return l;
        throw std::logic_error("topology: missing link on a rail route");
    };
    auto rail_of = [&](std::uint32_t g) { return (g % per) * nics / per; };
    // The first GPU of a node's NIC r: it forwards cross-rail traffic when there are no spines, or under PXN.
    auto first_on = [&](std::uint32_t node, std::uint32_t r) { return node * per + (r * per + nics - 1) / nics; };
    auto nic_node = [&](std::uint32_t node, std::uint32_t r) { return m_first_nic + node * nics + r; };
    // Towards GPU `d` from somewhere inside node `n` (GPU `from`, or the switch): the next node.
    auto inside = [&](std::uint32_t n, std::uint32_t from, std::uint32_t d) -> std::int64_t {
        std::uint32_t target = d;
        if (d / per != n) {
            if ((spines > 0 && !pxn) || (from < m_gpus && rail_of(from) == rail_of(d))) return -1;  // out through its NIC
            target = first_on(n, rail_of(d));
            if (target == from) return -1;
        }
        return switched && from < m_gpus ? std::int64_t(m_first_intra + n) : std::int64_t(target);
    };
    for (std::uint32_t u = 0; u < m_nodes; ++u)
        for (std::uint32_t d = 0; d < m_gpus; ++d) {
            const std::size_t k = std::size_t(u) * m_gpus + d;
            m_route_first[k] = std::uint32_t(m_route_links.size());
            if (u == d) continue;
            const std::uint32_t dnode = d / per, drail = rail_of(d);
            if (u < m_gpus) {  // a GPU
                const std::int64_t next = inside(u / per, u, d);
                m_route_links.push_back(link_to(u, next >= 0 ? std::uint32_t(next) : nic_node(u / per, rail_of(u))));
            } else if (u < m_first_nic) {  // a node's switch
                const std::int64_t next = inside(u - m_first_intra, u, d);
                if (next < 0) continue;
                m_route_links.push_back(link_to(u, std::uint32_t(next)));
            } else if (u < m_first_rail) {  // a NIC
                const std::uint32_t node = (u - m_first_nic) / nics, r = (u - m_first_nic) % nics;
                if (dnode != node) m_route_links.push_back(link_to(u, m_first_rail + r));
                else if (drail == r) m_route_links.push_back(link_to(u, d));
            } else if (u < m_first_spine) {  // a rail switch
                const std::uint32_t r = u - m_first_rail;
                if (drail == r) {
                    m_route_links.push_back(link_to(u, nic_node(dnode, r)));
                } else {
                    for (std::uint32_t s = 0; s < spines; ++s) m_route_links.push_back(link_to(u, m_first_spine + s));
                }
            } else {  // a spine
                m_route_links.push_back(link_to(u, m_first_rail + drail));
            }
            m_route_count[k] = std::uint32_t(m_route_links.size()) - m_route_first[k];
        }
}

// Breadth-first search from every destination over the reversed links: the candidates at a node
// are its links onto a node one hop closer. Cycles of shortest paths are possible on arbitrary
// graphs; the fabric's watchdog reports the deadlock if one forms.
void Topology::route_shortest() {
    const std::uint32_t inf = std::numeric_limits<std::uint32_t>::max();
    m_route_first.assign(std::size_t(m_nodes) * m_gpus, 0);
    m_route_count.assign(std::size_t(m_nodes) * m_gpus, 0);
    std::vector<std::uint32_t> dist(m_nodes);
    std::vector<std::vector<std::uint32_t>> candidates(m_nodes);
    for (std::uint32_t dst = 0; dst < m_gpus; ++dst) {
        std::fill(dist.begin(), dist.end(), inf);
        std::deque<std::uint32_t> queue{dst};
        dist[dst] = 0;
        while (!queue.empty()) {
            const std::uint32_t v = queue.front();
            queue.pop_front();
            for (std::uint32_t l : m_in[v]) {
                const std::uint32_t u = m_links[l].src;
                if (dist[u] == inf) {
                    dist[u] = dist[v] + 1;
                    queue.push_back(u);
                }
            }
        }
        for (std::uint32_t u = 0; u < m_nodes; ++u) {
            const std::size_t k = std::size_t(u) * m_gpus + dst;
            m_route_first[k] = std::uint32_t(m_route_links.size());
            if (u == dst || dist[u] == inf) continue;
            for (std::uint32_t l : m_out[u])
                if (dist[m_links[l].dst] + 1 == dist[u]) m_route_links.push_back(l);
            m_route_count[k] = std::uint32_t(m_route_links.size()) - m_route_first[k];
        }
    }
}

// Dimension order: x first, then y; on a torus (or ring) the shorter way round, ties going +.
void Topology::route_dimension_order(std::uint32_t x, std::uint32_t y, bool torus, bool bidirectional) {
    m_dateline = torus;
    m_route_first.assign(std::size_t(m_nodes) * m_gpus, 0);
    m_route_count.assign(std::size_t(m_nodes) * m_gpus, 0);
    auto find = [this](std::uint32_t a, std::uint32_t b, std::int8_t dim) {
        for (std::uint32_t l : m_out[a])
            if (m_links[l].dst == b && m_links[l].dim == dim) return l;
        throw std::logic_error("topology: missing link on a dimension-order route");
    };
    auto step = [&](std::uint32_t from, std::uint32_t to, std::uint32_t size) -> int {
        if (from == to) return 0;
        if (!torus) return to > from ? 1 : -1;
        const std::uint32_t forward = (to + size - from) % size;
        if (!bidirectional) return 1;
        return forward <= size - forward ? 1 : -1;
    };
    for (std::uint32_t u = 0; u < m_nodes; ++u)
        for (std::uint32_t dst = 0; dst < m_gpus; ++dst) {
            const std::size_t k = std::size_t(u) * m_gpus + dst;
            m_route_first[k] = std::uint32_t(m_route_links.size());
            if (u == dst) continue;
            const std::uint32_t ux = u % x, uy = u / x, dx = dst % x, dy = dst / x;
            std::uint32_t next;
            std::int8_t dim;
            if (int s = step(ux, dx, x)) {
                next = uy * x + std::uint32_t((int(ux) + s + int(x)) % int(x));
                dim = 0;
            } else {
                const int t = step(uy, dy, y);
                next = std::uint32_t((int(uy) + t + int(y)) % int(y)) * x + ux;
                dim = y == 1 ? 0 : 1;
            }
            m_route_links.push_back(find(u, next, dim));
            m_route_count[k] = 1;
        }
}

std::uint32_t Topology::hops(std::uint32_t src, std::uint32_t dst) const {
    std::uint32_t node = src, count = 0, n;
    while (node != dst) {
        const std::uint32_t* links = next(node, dst, n);
        if (n == 0) throw std::invalid_argument("topology: no route from " + node_name(src) + " to " + node_name(dst));
        node = m_links[links[0]].dst;
        if (++count > m_nodes) throw std::logic_error("topology: routing loop");
    }
    return count;
}

std::string Topology::node_name(std::uint32_t node) const {
    if (node < m_gpus) return "gpu" + std::to_string(node);
    if (m_per == 0) return "s" + std::to_string(node - m_gpus);
    if (node < m_first_nic) return "n" + std::to_string(node - m_first_intra) + ".switch";
    if (node < m_first_rail)
        return "n" + std::to_string((node - m_first_nic) / m_nics) + ".nic" + std::to_string((node - m_first_nic) % m_nics);
    if (node < m_first_spine) return "rail" + std::to_string(node - m_first_rail);
    return "spine" + std::to_string(node - m_first_spine);
}

}  // namespace eidola
