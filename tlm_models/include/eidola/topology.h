// Fabric topologies as graphs of nodes and unidirectional links, with their routing tables.
// Nodes 0..gpus-1 are the GPUs' routers (each GPU injects into and ejects from its own node);
// switch nodes follow. Routes are computed once, before simulation, so a hop costs a table look-up.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eidola {

/// One unidirectional link.
struct TopoLink {
    std::uint32_t src;            ///< sending node
    std::uint32_t dst;            ///< receiving node
    double bytes_per_s;           ///< raw bandwidth of one lane
    std::uint64_t latency_ps;     ///< propagation latency
    std::uint32_t header;         ///< bytes added to every packet on this link
    std::uint32_t lanes;          ///< parallel links between the pair (a packet uses one)
    std::int8_t dim = -1;         ///< dimension of a mesh/torus/ring link (0 = x, 1 = y), else -1
    bool wrap = false;            ///< a torus/ring wrap-around link (the dateline)
    /// A NIC or network link of a rail topology: its header is per network packet of the NIC's
    /// MTU (TopologySpec::nic_mtu), not per GPU packet.
    bool framed = false;
    /// A rail NIC's link to its rail switch: where a message's NIC processing time is taken.
    bool nic_out = false;
};

/// Link parameters used where a topology does not say otherwise.
struct LinkParams {
    double bytes_per_s = 64e9;        ///< raw bandwidth per lane
    std::uint64_t latency_ps = 100000;///< propagation latency
    std::uint32_t header = 16;        ///< per-packet overhead in bytes
    std::uint32_t lanes = 1;          ///< parallel links per connected pair
};

/// What to build.
struct TopologySpec {
    std::string kind = "fully_connected";  ///< fully_connected, ring, mesh2d, torus2d, switch, hierarchical, rail, custom
    std::uint32_t gpus = 4;                ///< GPU count
    std::vector<std::uint32_t> dims;       ///< mesh2d/torus2d: {x, y}; empty: the squarest factorisation
    bool bidirectional = true;             ///< ring: links both ways
    LinkParams link;                       ///< GPU-GPU (and GPU-switch) links
    std::uint32_t gpus_per_node = 8;       ///< hierarchical, rail: GPUs per node
    std::string intra = "fully_connected"; ///< hierarchical, rail: inside a node, fully_connected or switch
    std::uint32_t spines = 1;              ///< hierarchical, rail: spine switches (rail: 0 allowed)
    /// rail: cross-rail traffic between nodes crosses the source node to the GPU on the destination's rail
    /// and leaves through that GPU's NIC (NCCL's PXN), instead of going up the spines.
    bool pxn = false;
    LinkParams nic;                        ///< hierarchical: GPU NIC to its node's leaf; rail: NIC to its rail switch
    LinkParams network;                    ///< hierarchical: leaf to spine; rail: rail switch to spine
    std::uint32_t nics = 0;                ///< rail: NICs per node (0: one per GPU)
    LinkParams pcie;                       ///< rail: GPU to its NIC
    std::uint32_t nic_mtu = 0;             ///< rail: NIC and network links frame data in packets of this payload (0: off)
    std::uint32_t switches = 0;            ///< custom: switch nodes (named s0, s1, ...)
    std::string edges;                     ///< custom: "src dst bandwidth latency header lanes;..." ("-": default)
};

/// The graph and its routes.
class Topology {
public:
    /// Builds the graph; throws std::invalid_argument naming the problem.
    explicit Topology(const TopologySpec& spec);

    std::uint32_t nodes() const { return m_nodes; }
    std::uint32_t gpus() const { return m_gpus; }
    const std::vector<TopoLink>& links() const { return m_links; }
    /// Links leaving `node`, by link index.
    const std::vector<std::uint32_t>& out_links(std::uint32_t node) const { return m_out[node]; }
    /// Links entering `node`, by link index.
    const std::vector<std::uint32_t>& in_links(std::uint32_t node) const { return m_in[node]; }
    /// Candidate next links from `node` towards GPU `dst` (all on shortest or dimension-order paths).
    const std::uint32_t* next(std::uint32_t node, std::uint32_t dst, std::uint32_t& count) const {
        const std::size_t k = std::size_t(node) * m_gpus + dst;
        count = m_route_count[k];
        return m_route_links.data() + m_route_first[k];
    }
    /// Hops on the route from GPU `src` to GPU `dst` (following the first candidate).
    std::uint32_t hops(std::uint32_t src, std::uint32_t dst) const;
    /// Whether routes can close a cycle of links, so packets need dateline virtual channels.
    bool needs_dateline() const { return m_dateline; }
    /// A readable name of a node ("gpu3", "s0"; rail: "n1.nic3", "n1.switch", "rail3", "spine0").
    std::string node_name(std::uint32_t node) const;
    /// rail: the NIC's MTU on framed links (0: no framing).
    std::uint32_t mtu() const { return m_mtu; }

private:
    std::uint32_t add_link(std::uint32_t src, std::uint32_t dst, const LinkParams& p, std::int8_t dim = -1,
                           bool wrap = false);
    void build_grid(const TopologySpec& spec, bool torus);
    void build_ring(const TopologySpec& spec);
    void build_custom(const TopologySpec& spec);
    void build_rail(const TopologySpec& spec);
    /// GPU i of node n's links inside the node (of `per` GPUs): to the node's switch `intra_switch` both ways,
    /// or (no switch: `intra_switch` < 0) to every other GPU of the node; hierarchical and rail share it.
    void add_intra_links(std::uint32_t n, std::uint32_t i, std::uint32_t per, std::int64_t intra_switch,
                         const LinkParams& link);
    void route_rail(std::uint32_t per, std::uint32_t nics, std::uint32_t spines, bool switched, bool pxn);
    void route_shortest();
    void route_dimension_order(std::uint32_t x, std::uint32_t y, bool torus, bool bidirectional);

    std::uint32_t m_gpus = 0;
    std::uint32_t m_nodes = 0;
    std::vector<TopoLink> m_links;
    std::vector<std::vector<std::uint32_t>> m_out, m_in;
    std::vector<std::uint32_t> m_route_first, m_route_count, m_route_links;
    bool m_dateline = false;
    // rail: where each kind of node starts (node_name), and the MTU of the framed links
    std::uint32_t m_per = 0, m_nics = 0, m_first_intra = 0, m_first_nic = 0, m_first_rail = 0, m_first_spine = 0;
    std::uint32_t m_mtu = 0;
};

}  // namespace eidola
