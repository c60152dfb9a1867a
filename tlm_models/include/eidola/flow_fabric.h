// The flow-level fabric: the packet fabric's platform (topologies, routes, lanes, headers,
// acknowledgements, NICs and spines, from the same Topology) at the fidelity of a fluid model.
// Each transaction is one flow along its route; flows share every directed link, and the GPU
// ports where those are limited, weighted max-min fairly (flow_solver.h), with the wire bytes a
// flow puts on a link per payload byte as its weight; rates are recomputed when a flow starts or
// ends. A flow's first packet takes the route's zero-load latency (the packet fabric's own
// formula), its last byte leaves at the flow's rate and the response comes back over the reverse
// route at zero-load latency. With fabric.switch.nvls (topology switch), a multimem access is one
// flow through the switch that uses the requester's link, every member's links and (a
// load-reduce) the switch's reduction engine at once (flow_nvls.cpp). What it leaves out: queueing (short flows get their fair rate at
// once and never wait), head-of-line blocking, back-pressure and per-input-port arbitration.
// See docs/fabrics.md, "Flow".
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <memory>
#include <unordered_map>
#include <vector>

#include <systemc>
#include <tlm>

#include "eidola/bin_budget.h"
#include "eidola/fabric.h"
#include "eidola/fabric_ports.h"
#include "eidola/flat_index.h"
#include "eidola/flow_solver.h"
#include "eidola/front_queue.h"
#include "eidola/message_extension.h"
#include "eidola/multimem_extension.h"
#include "eidola/packet_fabric.h"
#include "eidola/params.h"
#include "eidola/port_turns.h"
#include "eidola/timing_wheel.h"
#include "eidola/topology.h"

namespace eidola {

class PacketPool;
struct FlowExtension;

/// A flow-level TLM-2.0 fabric over the packet fabric's Topology and parameters (the same
/// platform file runs on either). b_transport on targets[i] is forwarded at zero-load latency.
class FlowFabric : public FabricShell<FlowFabric> {
public:
    /// The packet fabric's parameters: a platform switches fabric.model and nothing else.
    /// Buffers, virtual channels and the watchdog have no meaning here and are ignored.
    using Params = PacketFabricParams;
    SC_HAS_PROCESS(FlowFabric);

    FlowFabric(sc_core::sc_module_name name, const ParamSet& params);
    ~FlowFabric() override;

    std::vector<LinkStats> link_stats() const override;
    std::vector<PairStats> pair_stats() const override;
    std::vector<std::uint64_t> window_full_ps() const override;
    std::uint64_t events() const override { return m_actions.processed(); }
    std::uint64_t bin_ps() const override { return m_bin_budget.width_ps() << m_end_doublings; }
    std::uint32_t bin_doublings() const override { return m_bin_budget.doublings() + m_end_doublings; }
    const Topology& topology() const { return *m_topology; }
    std::vector<std::string> node_names() const override {
        std::vector<std::string> names;
        for (std::uint32_t n = 0; n < m_topology->nodes(); ++n) names.push_back(m_topology->node_name(n));
        return names;
    }
    /// What the switch's NVLS unit did (all zero without fabric.switch.nvls).
    NvlsCounters nvls_counters() const override { return m_nvls_counters; }

private:
    friend struct FabricTargetPort<FlowFabric>;
    friend struct FabricInitiatorPort<FlowFabric>;
    friend class PortTurns<FlowFabric>;
    FlowFabric(sc_core::sc_module_name name, const Params& params);

    enum class ActionKind : std::uint8_t {
        Solve, Finish, Deliver, Return, RequestFree, ResponseFree, Refill, NvlsIn, Slip, Issued, IncastFull,
        Begin,    // a BEGIN_REQ annotated with a delay, due
        ReadData  // a read's first answer would leave its target: its data's flow starts (read_after_first_answer)
    };
    struct Action {
        ActionKind kind;
        std::uint32_t a;  // flow id or port
        std::uint32_t b;  // a Finish's flow version, a Return's source port
        tlm::tlm_generic_payload* trans;
    };
    /// A transaction in flight as a flow.
    struct alignas(64) Flow {
        // What a solve and a change of its rate read and write (solve_rates, set_rate, count_send_rate,
        // finish), together in its first cache line: a flow is touched at every event of its own, and at
        // 1,024 GPUs the flows do not fit in a core's cache, so each line it spreads over is a miss.
        double remaining = 0;            // payload bytes not yet sent, as of anchor_ps
        double rate = 0;                 // payload bytes per second since anchor_ps
        std::uint64_t anchor_ps = 0;
        // Its last byte leaves at finish_ps at its present rate. booked_ps: its Finish standing in the
        // queue (~0: none). A rate change that moves the finish later books nothing: the standing
        // Finish, due first, books the next then (finish()). Why: in a solve every flow whose rate moved
        // re-booked its Finish, and the stale ones each woke the fabric for nothing (flags behind full
        // windows on a torus: 4 million of them, most of a 64 KiB all-reduce's events).
        std::uint64_t finish_ps = 0, booked_ps = ~std::uint64_t(0);
        std::uint64_t round_trip_ps = 0; // a packet's zero-load round trip, memory included (a burst: when
                                         // its packets are answered and the windows free)
        std::uint32_t src = 0;
        std::int32_t output = -1;        // queued: its output queue (Issuer::outputs)
        bool read = false;
        bool sends = false;              // a write its GPU's window paces (not a read or a multimem access): its
                                         // rate counts in its GPU's send rate (start_flow; count_send_rate)
        bool queued = false;             // telling: its end is its place in its GPU's output queue (flow_issue.cpp)
        bool due = false;                // queued: its place in the output queue has been sent (delivered)
        bool late = false;               // due before its flow carried its bytes (flow.injection: free): delivered
                                         // when its flow ends instead (fifo_due)
        bool counted = false;            // its rate is in its GPU's issue rate (m_issue_rate)
        bool telling = false;            // its GPU waits to hear that its last packet is issued (tell_sent)
        bool sent_all = false;           // queued: its flow has sent its bytes
        bool outpaced = false;           // queued: a write of its output that went faster has sent its bytes
                                         // while this one still sent (held_further_on)
        bool paced_done = false;         // telling: the fluid issued its last byte at its pace, not at once (plan_issue)
        // The rest, read when it starts, ends or is issued.
        // The windows on its way (buffer credits, the GPU's outstanding limit) may have room for
        // some of its packets at once: those go first as a burst, which only the links limit; the
        // rest then go paced by the windows too, with the weights in `paced`.
        std::uint64_t paced_bytes = 0;   // bytes left for the paced phase after the burst (0: none)
        /// Its payload bytes not yet sent at `now` of the phase under way (at its rate since anchor_ps; not
        /// with an unlimited rate), and with the paced phase's still to come.
        double remaining_at(std::uint64_t now) const {
            return std::max(0.0, remaining - rate * double(now - anchor_ps) * 1e-12);
        }
        double unsent_at(std::uint64_t now) const { return remaining_at(now) + double(paced_bytes); }
        tlm::tlm_generic_payload* trans = nullptr;
        std::uint32_t dst = 0;
        // Its pair's routes (m_routes), there and back, found once when it starts: the n x n index
        // (4 MB at 1,024 GPUs) is a cache miss per look-up, and a flow's route is asked for at its
        // start, its issue, its end and its accounting.
        std::uint32_t route = 0, back = 0;
        std::uint32_t packets = 1;       // packets it stands for
        std::uint64_t bytes = 0;         // payload bytes
        std::uint32_t packet_bytes = 0;  // payload per packet but the last
        std::uint32_t holds = kNoHolds;  // a burst: what it holds of the windows (m_holds), till Refill
        std::uint64_t start_ps = 0;      // issued
        std::vector<FlowSolver::Use> paced;
        std::int64_t behind = -1;        // a single packet slipping in behind this injection queue's backlog
        std::uint64_t slip_ps = 0;       // when it goes (0: not yet worked out)
        std::uint64_t arrived_ps = 0;    // its BEGIN_REQ (it may wait in its injection queue after that)
        std::int64_t queue = -1;         // its injection queue (m_injection), -1: none
        const MultimemExtension* multimem = nullptr;  // a multimem access through the NVLS switch
        FlowExtension* ext = nullptr;    // its GPU's flow extension (window, workgroup), if any: looked up once
        // The extension's window (packets) and workgroup, copied here when it starts (0 without one, so a
        // window above 0 implies an extension): the
        // issue fluid reads them at every plan and every signal's place, and the payload's line is cold
        // by then at 1,024 GPUs.
        std::uint32_t window = 0, workgroup = 0;
        double unissued = 0;             // telling: its bytes the GPU has not yet issued (flow_issue.cpp)
        bool alone = false;              // a flag timed outside the solver (timed_alone)
        bool slip_waited = false;        // a signal that waited once for its time step's solve (slip)
        bool parked = false;             // queued: waits for its workgroup's write ahead of it on its output (park)
        MessageFraming framing;          // rail: how the NICs frame it (network packets, message start/end)
        // The incast queue its route ends in (m_incasts; -1: none), its wire bytes there per payload byte, and
        // the rate it is counted in that queue's arrivals at (count_incast).
        std::int32_t incast = -1;
        double incast_weight = 0, incast_rate = 0;
        bool incast_drained = false;     // queued: its bytes are out, it arrives no more
        std::uint64_t incast_stamp = 0;  // its last arrival rate's number (m_incast_stamps): older drains are stale
    };
    /// A multimem access whose flow has been sent: the switch's copies or reads at the members,
    /// and the answers it waits for before it answers the requester.
    struct NvlsOp {
        tlm::tlm_generic_payload* parent = nullptr;
        std::uint32_t requester = 0;
        std::uint32_t pending = 0;      // members yet to answer
        bool reduce = false;            // a load-reduce (else a store)
        std::uint64_t last = 0;         // payload of its last packet
        std::uint32_t members = 0;
        std::uint64_t late = 0;         // how much later than due its copies or reads went out
    };
    /// The writes a GPU sends to one GPU through one output link, first come first served: a GPU
    /// issues a write's packets at once, as far as its window lets it, so they sit in its injection
    /// queue behind those issued before to the same GPU, and only writes issued at the same time
    /// interleave. Writes to other GPUs are in queues of their own, which share the link (the packet
    /// fabric's virtual output queues: a packet never waits behind one bound elsewhere), so an
    /// all-to-all's units to one peer do not wait for those to the others. The writes issued first
    /// are active; the rest wait until they have been sent, unless the GPU's window binds and it
    /// also writes elsewhere through the link (shares_window_turns): then each workgroup's first
    /// waiting write goes at once, and its next when that one has been sent (take_turns). A
    /// signal, which the GPU issues as one packet in its round robin, waits only for the backlog
    /// its window lets the flows ahead hold (slip_at).
    struct Injection {
        FrontQueue<std::uint32_t> waiting;
        std::vector<std::uint32_t> active_ids;  // the active writes
        std::uint32_t active = 0;
        std::uint64_t active_since = 0;  // when the active writes were issued
        std::uint32_t first_link = 0;    // the output link it sends through
    };
    /// The links a GPU pair's packets take, with the share of them on each (routing.spread splits
    /// them evenly over equal-cost next hops), and the first-choice path for latencies.
    struct Route {
        std::vector<std::pair<std::uint32_t, double>> links;  // (link, fraction of packets)
        std::vector<std::uint32_t> path;                      // first choice at every node
        std::vector<std::uint8_t> halves;  // ring and torus: the dateline half of each of `links` (empty: all 0)
        std::uint32_t half(std::size_t k) const { return k < halves.size() ? halves[k] : 0; }
        std::int32_t injection = -1;  // its source's injection queue on path[0] (m_injection), -1: not yet looked up
        // zero_load_ps's last two answers on this route: a flow asks it up to five times, for its
        // last packet's size and its full packets' (which alternate, and a single answer kept
        // missed), and the walk over the path divides per link.
        struct ZeroLoad {
            std::uint64_t payload = ~std::uint64_t(0);
            std::uint8_t flags = 0;  // ack | starts_message << 1
            std::uint64_t ps = 0;
        };
        ZeroLoad memo[2];
        std::uint8_t memo_next = 0;  // the answer the next new one replaces
        bool whole = true;  // every packet crosses every link of `links` (no spreading)
        std::int32_t incast = -1;  // the incast queue at its last link (m_incasts), -1: none
        // What the finished flows put on this route's links, counted per route and spread over its
        // links only when link_stats() asks (a whole route's counts are sums of whole numbers, the
        // same in any order): as the route of their request (`out`) and of their response (`back`).
        // Counting link by link as each flow finished read every link's statistics record, some
        // 200 bytes, twice per flow: a cache miss each at hundreds of GPUs.
        struct Carried {
            std::uint64_t packets = 0;   // packets (and acknowledgements) of the flows
            std::uint64_t bytes = 0;     // payload carried this way (writes out, reads back)
            std::uint64_t headed = 0;    // packets with a link header (the rest carry link.ack)
            std::uint64_t frames = 0;    // framed links: the NIC's network packets of that payload
            std::uint64_t control = 0;   // framed links: requests and acknowledgements as one network packet
            std::uint64_t messages = 0;  // messages started (the sending NIC's processing, out only)
        };
        Carried out, back;
    };

    tlm::tlm_sync_enum request(std::uint32_t src, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                               sc_core::sc_time& delay);
    tlm::tlm_sync_enum response(std::uint32_t dst, tlm::tlm_generic_payload& trans, tlm::tlm_phase& phase,
                                sc_core::sc_time& delay);
    void forward_b_transport(std::uint32_t src, tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
    unsigned int forward_debug(tlm::tlm_generic_payload& trans);

    void on_event();
    void start_flow(std::uint32_t src, std::uint32_t dst, tlm::tlm_generic_payload& trans);
    std::uint32_t new_flow();
    void activate(std::uint32_t id);
    void launch(std::uint32_t id, std::uint64_t round_trip);
    void decide_bursts();
    void start_burst(std::uint32_t id, std::uint64_t burst_packets);
    /// Flow `id` into the solver over `uses`, coupled to the writes of its injection queue (flow.injection).
    void add_to_solver(std::uint32_t id, const std::vector<FlowSolver::Use>& uses);
    /// The key coupling write `f` to its GPU's other long writes through the same output link (0: none).
    std::uint64_t injection_key(const Flow& f) const;
    /// Adds `weight` to the flow's use of `resource` (`first`: served first, FlowSolver::Use).
    void add_use(std::uint32_t resource, double weight, bool first = false);
    void add_pace(std::uint32_t resource, double weight, double per_packet, bool first = false);
    /// The credits of `link` in class `cls` for a flow bound for GPU `to` (`first`: served first where they are a use).
    void pace_credits(std::uint32_t link, std::uint32_t cls, std::uint32_t half, std::uint32_t to, double share,
                      double weight, double per_packet, bool first);
    std::uint32_t credit_channel(std::uint32_t link, std::uint32_t group, std::uint32_t slot);
    void sent(std::uint32_t id);
    void activate_waiting(Injection& q, std::size_t k = 0);
    void take_turns(Injection& q);
    bool has_turn(const Injection& q, std::uint32_t id) const;
    void slip(std::uint32_t id);
    std::uint64_t slip_at(const Injection& q) const;
    bool own_backlog(const Injection& q, std::uint32_t wg) const;
    /// Whether write `f` goes beside the earlier writes of its queue (flow.issue: queue); `waiting`: it is one of
    /// the queue's waiting writes already.
    bool shares_window_turns(const Flow& f, bool waiting = false) const;
    /// A write's bytes issued and not yet answered: still to send, and sent but not yet answered.
    struct Outstanding {
        double unsent = 0, unanswered = 0;
    };
    Outstanding outstanding(const Flow& g, std::uint64_t now) const;
    void schedule_solve();
    void solve();
    void solve_rates(std::uint64_t now);
    void finish(std::uint32_t id, std::uint32_t version);
    void book_finish(std::uint32_t id, std::uint64_t at_ps);
    void begin_annotated(std::uint32_t src, std::uint32_t dst, tlm::tlm_generic_payload& trans);
    /// PortTurns' hook before a request goes out: the flow fabric counts it when its flow starts.
    void sending(std::uint32_t, tlm::tlm_generic_payload*, std::uint32_t) {}
    void book_request_free(std::uint32_t dst, std::uint64_t at);
    void book_response_free(std::uint32_t src, std::uint64_t at);
    void answered(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at);
    /// Pushes the Return of `trans` (from `src`, answered by `dst`), whose answer left `dst` at `at`.
    void book_return(std::uint32_t dst, tlm::tlm_generic_payload* trans, std::uint32_t src, std::uint64_t at);
    void read_after_first_answer(std::uint32_t id);
    void read_half_in(std::uint32_t dst, tlm::tlm_generic_payload* trans, FlowExtension& ext, std::uint32_t src,
                      std::uint64_t at);
    std::uint32_t route_index(std::uint32_t src, std::uint32_t dst);  // the pair's place in m_routes, built on first use

    // NVLink SHARP at the switch (flow_nvls.cpp)
    void setup_nvls(const Params& p);
    void nvls_uses(Flow& f, std::uint64_t& round_trip);
    void nvls_sent(Flow& f, std::uint64_t last_starts);
    void nvls_answered(std::uint32_t member, tlm::tlm_generic_payload* child, std::uint64_t at);
    void nvls_in(std::uint32_t op);
    void nvls_count_links(const Flow& f);
    std::uint64_t link_ps(std::uint32_t link, std::uint64_t payload, bool ack) const;
    /// zero_load_ps on route `route` of m_routes (from its source to its destination, not a GPU to itself).
    std::uint64_t zero_load_on(std::uint32_t route, std::uint64_t payload, bool ack, bool starts_message = false);
    /// zero_load_ps from flow `f`'s source to its destination.
    std::uint64_t zero_load_of(const Flow& f, std::uint64_t payload, bool ack, bool starts_message = false) {
        return f.src == f.dst ? 0 : zero_load_on(f.route, payload, ack, starts_message);
    }
    std::uint64_t zero_load_ps(std::uint32_t from, std::uint32_t to, std::uint64_t payload, bool ack,
                               bool starts_message = false);
    /// rail: NIC header bytes a message framed as `m` (a read if `read`) puts on framed link `l` forward (`forward`)
    /// or back.
    double framed_header(const MessageFraming& m, bool read, const TopoLink& l, bool forward) const;
    /// Header bytes a transfer of `packets` GPU packets framed as `m` puts on link `l`, forward or back (both ways'
    /// headers and acknowledgements, as the packet fabric sends them).
    double link_headers(const MessageFraming& m, bool read, double packets, const TopoLink& l, bool forward) const;
    std::uint32_t window_resource(std::uint32_t gpu, std::uint32_t window);
    void count_links(const Flow& f);
    void spread_carried(std::vector<LinkStats>& stats, std::vector<std::uint64_t>& overhead) const;
    // The links' busy time over time (flow_bins.cpp).
    void account_busy(std::uint32_t link, std::uint64_t now);
    void add_busy(std::uint32_t link, std::uint64_t now, double wire_ps);
    void open_bin(std::uint32_t link, std::uint64_t bin);
    void coarsen_bins();
    static float spill_bins(std::vector<std::pair<std::uint64_t, float>>& bins, std::uint64_t from, float busy,
                            float capacity, std::uint64_t until);
    /// What link `link`'s bins integrate: the solver's load there, less what queued writes put on it (those are
    /// spread from m_sent_writes instead).
    double binned_load(std::uint32_t link) const {
        return std::max(0.0, m_solver.load(link) - m_solver.tagged_load(link));
    }
    void log_sent_write(const Flow& f);
    template <class Visit>
    void visit_late_busy(Visit&& visit) const;
    std::uint32_t late_doublings(std::size_t held) const;
    std::vector<std::vector<std::pair<std::uint64_t, float>>> sent_write_bins(std::uint64_t width) const;
    static void merge_bins(std::vector<std::pair<std::uint64_t, float>>& bins,
                           const std::vector<std::pair<std::uint64_t, float>>& more, float capacity);
    static void spread_bytes(LinkStats& s);
    /// A queued write (flow_issue.cpp) as its links' bins see it. Its flow keeps its max-min share until its place
    /// in its output queue comes, after its bytes are out where the GPU's gates issue slower than that share, so
    /// its share's time is not its links' busy time (hierarchical-16gpu's 16 MiB direct all-reduce: a link inside
    /// a node read 40-100% a bin against the packet fabric's 9%, its bins adding up to 5.5 times its busy time).
    /// Its bytes leave between its start and its end, in the order its output queue sends them, so the bins
    /// spread them evenly over that time; the solver tags its flow, so that the integrated loads leave it out.
    struct SentWrite {
        std::uint64_t start_ps = 0, end_ps = 0, bytes = 0;
        std::uint32_t route = 0, back = 0, packets = 0;
        MessageFraming framing;
    };
    std::vector<SentWrite> m_sent_writes;
    /// Busy time binned at the end (sent_write_bins): a flag's wire time on a link its incast queue stands in for.
    struct LateBusy {
        std::uint32_t link;
        std::uint64_t at_ps;
        double lane_ps;
    };
    std::vector<LateBusy> m_late_busy;
    void timed_alone(std::uint32_t id);
    // The packet GPU's issue of posted writes, as a fluid (flow_issue.cpp).
    void set_rate(Flow& f, double rate);
    void count_rate(Flow& f, double rate);
    void count_send_rate(Flow& f, double rate);
    void issue_write(std::uint32_t id);
    void fifo_due(std::uint32_t id);
    void deliver_queued(Flow& f, std::uint64_t last, std::uint64_t last_starts);
    bool carry_on(std::uint32_t id, std::uint64_t now);
    bool held_further_on(std::uint32_t id, std::uint64_t now) const;
    void mark_outpaced(const Flow& f);
    template <class Match>
    bool any_sending_on(std::uint32_t gpu, std::int32_t output, Match&& match) const;
    void account_flow(std::uint32_t id);
    double issue_cap(std::uint32_t gpu, const Flow& f) const;
    void advance_issue(std::uint32_t gpu);
    void plan_issue(std::uint32_t gpu);
    void issued(std::uint32_t gpu, std::uint32_t version);
    void tell_sent(Flow& f, std::uint64_t later_ps = 0, double behind_bytes = 0,
                   double by = std::numeric_limits<double>::infinity());
    /// The largest payload timed alone (timed_alone): a flag, a counter, a signal's operand.
    static constexpr std::uint64_t kFlagBytes = 64;
    /// A window of at least this many of a flag's packets is never held full by flags (timed_alone).
    static constexpr double kLargeWindow = 1024;
    std::uint32_t ack_wire(const TopoLink& l) const { return m_ack_bytes ? m_ack_bytes : l.header; }
    /// An acknowledgement's bytes at a GPU port (link.header where link.ack is 0), as ack_wire is on a link.
    std::uint32_t port_ack_wire() const { return m_ack_bytes ? m_ack_bytes : m_header; }
    /// Of the `n` equal-cost next links at a node, how many a route takes: all with routing.spread, else the first.
    std::uint32_t choices_used(std::uint32_t n) const { return m_spread ? n : std::min<std::uint32_t>(n, 1); }
    /// One packet's wire bytes on link `l` with `payload` bytes of data (an acknowledgement with `ack`): a framed
    /// link's NIC header per MTU of it (at least one), else the link's header or acknowledgement.
    std::uint64_t packet_wire(const TopoLink& l, std::uint64_t payload, bool ack) const {
        return l.framed ? payload + std::max<std::uint64_t>(1, (payload + m_mtu - 1) / m_mtu) * l.header
                        : payload + (ack ? ack_wire(l) : l.header);
    }
    double credit_seconds(const TopoLink& l, std::uint64_t wire) const;
    bool credits_cover(const TopoLink& l, std::uint64_t small, std::uint64_t big) const;

    std::unique_ptr<Topology> m_topology;
    std::uint64_t m_switch_latency_ps;
    bool m_store_and_forward;
    std::uint32_t m_flit;
    std::uint32_t m_ack_bytes;
    bool m_spread;
    BinBudget m_bin_budget;  // the over-time bins' width, and their count against stats.max_bins
    mutable std::uint32_t m_end_doublings = 0;  // and the doublings link_stats() added for the bins it made
    bool m_bins_over = false;  // open_bin passed stats.max_bins: coarsen once the bins of the old width are in
    std::uint32_t m_header;          // link.header: the GPU ports' per-packet overhead
    std::uint64_t m_mtu;             // rail: the NICs' MTU (0: no framed links)
    std::uint64_t m_message_ps;      // rail: a message's processing time at its sending NIC
    bool m_credit_bytes;             // switch.buffer given as a size: credits are flits (else packets)
    std::uint32_t m_credits;         // credits per virtual channel
    // resource of link l's request channels on dateline side `half`: m_credit_base + 2 (half x links + l) (+1: responses)
    std::uint32_t m_credit_base;
    bool m_voq_credits = false;      // switch.vcs 0: a credit channel per (link, class, next output) instead
    FlatIndex m_credit_channels;     // (link, dateline half and class, slot) -> its resource (credit_channel)
    bool m_issue_gates;              // flow.issue: gates (flow_issue.cpp), else queue
    bool m_responses_first;          // flow.responses: first (a flow's payload-free direction served first), else fair
    bool m_injection_blocking;       // flow.injection: blocking (a GPU's long writes through one output at one rate)
    std::vector<std::int64_t> m_inject, m_eject;  // per GPU and class: port resources (-1: unlimited)
    std::vector<std::int64_t> m_window;           // per GPU: its window resource (-1: none yet)
    static constexpr std::uint32_t kNoHolds = ~std::uint32_t(0);
    static constexpr std::uint64_t kNoFinish = ~std::uint64_t(0);  // Flow::booked_ps: no Finish standing
    static constexpr std::uint64_t kNoHalf = ~std::uint64_t(0);    // FlowExtension::fabric_half_ps: neither end in
    /// A GPU's issue of its posted writes (flow_issue.cpp): the writes whose last packet is not yet
    /// issued, what its gates (injection buffer, window) hold issued and not yet sent, and the rate
    /// its windowed writes are being sent at, which is the rate the gates free room at.
    struct Issuer {
        std::vector<std::uint32_t> pending;  // flows, by bytes left to issue at the last room shared, then as they came
        /// One of its output queues (one per first link): the bytes issued into it and sent from it
        /// in all, and its writes issued whole and its signals, in order, each with the count at
        /// which its last byte (a signal: what was issued before it) has been sent.
        struct Output {
            std::uint32_t link = 0;
            double rate = 0;           // its windowed writes' flows' rates now: what it sends
            double issued = 0, sent = 0;
            std::int32_t sending = 0;  // its windowed writes with a rate (in `rate`)
            std::uint32_t unsent = 0;  // its writes whose flows have not yet sent all their bytes
            std::uint32_t issuing = 0; // the GPU's pending writes into it, as of the last plan
            std::uint32_t packet_bytes = 0;  // the payload per packet of the last write queued (signal_room)
            FrontQueue<std::pair<double, std::uint32_t>> fifo;  // (count, flow id | kSignalInFifo)
            /// The workgroups with a write sending through it (one entry per such write), and the writes
            /// held back behind their workgroup's, in order: the packet GPU's injection queue holds a
            /// workgroup's writes one after another, so its next write's packets follow its last one's.
            std::vector<std::uint32_t> sending_wgs, parked;
            /// The GPU's windowed writes that leave by its link, as its window sees them: their send
            /// rate now, and its history over their round trip, oldest first, as steps. What they sent
            /// over that time is unanswered, and what they sent a round trip ago is answered now. Kept
            /// per link: a GPU's peers differ (one hop, or the network through its NIC), and answers
            /// from a near peer come back while a far one's are on their way.
            double window_rate = 0;
            double in_flight = 0;          // window_rate x their round trips (/ window_rate: their mean round trip)
            std::int32_t windowed = 0;     // its writes in window_rate
            struct Step {
                std::uint64_t from;  // when the rate became `rate`
                double rate;
                double sent;         // what the output had sent in all by `from`: a round trip's
                                     // sending is a difference of two, not a sum over its steps
            };
            FrontQueue<Step> history;
            std::uint64_t round_trip_ps = 0;  // their mean round trip, as of the last step
        };
        std::vector<Output> outputs;
        double rate = 0;                     // payload bytes per second its windowed writes' flows carry now
        std::int32_t sending = 0;            // its windowed writes with a rate (in `rate`)
        std::uint64_t anchor_ps = 0;         // what it holds and has issued is as of this time
        std::uint32_t version = 0;           // bumped at every booking: older Issued actions are stale
        std::uint64_t booked_ps = 0;         // when the last Issued action was booked for
        bool dirty = false;                  // its rate changed in the solve under way
        bool used = false;                   // its GPU has asked to hear when its writes are issued
        /// A workgroup told that its write is issued, with the room its turns have earned since: the
        /// packet GPU's round robin gives each workgroup its turns, and one told a few packets after
        /// another (plan_issue) has not lost them to the first one back when it comes with its next
        /// write. Held until it comes, or until the time step after it was told.
        struct Credit {
            std::uint32_t workgroup;
            std::uint64_t told_ps;
            double bytes;
        };
        std::vector<Credit> credits;
        /// Per incast queue its windowed writes push into: (queue, their payload rate there). Their bytes
        /// waiting in it are unanswered beyond the round trips (flow_incast.cpp).
        std::vector<std::pair<std::uint32_t, double>> incast_rates;
        /// unanswered() as of `unanswered_ps`, until a history changes: the plans ask for it often.
        mutable double unanswered_bytes = 0;
        mutable std::uint64_t unanswered_ps = ~std::uint64_t(0);
    };
    std::vector<Issuer> m_issuers;                // per GPU
    Issuer::Output& output_of(Flow& f);
    void all_sent(Flow& f);
    bool queue_signal(std::uint32_t id);
    bool park(std::uint32_t id);
    void unpark(Flow& f);
    void start_parked(Issuer::Output& out, std::vector<std::uint32_t>::iterator at);
    double signal_place(const Flow& f, const Issuer::Output& out) const;
    double signal_room(const Flow& f, const Issuer::Output& out) const;
    static constexpr std::uint32_t kSignalInFifo = 1u << 31;  // an output queue's entry that is a signal
    double gates_hold(const Issuer& is) const;
    double unanswered(const Issuer& is) const;
    std::uint64_t answered_until(const Issuer::Output& out) const;
    static std::size_t step_at(const Issuer::Output& out, std::uint64_t t);
    static double sent_by(const Issuer::Output& out, std::uint64_t t);
    struct Gates {
        double buffer, window;  // payload bytes
    };
    Gates gates_of(std::uint32_t gpu, const Flow& f) const;
    bool window_binds(std::uint32_t gpu) const;
    double issue_rate(std::uint32_t gpu, bool binds) const;
    double turns(const Issuer& is) const;
    double credited(const Issuer& is) const;
    double free_room(std::uint32_t gpu, const Flow& f) const;
    void expire_credits(Issuer& is);
    void share_room(Issuer& is, double room);
    double least_unissued(const Issuer& is) const;
    std::vector<std::uint32_t> m_dirty_issuers;   // scratch of solve(): GPUs whose rate changed
    std::vector<std::uint32_t> m_done_scratch;    // scratch of plan_issue(): the writes it tells
    std::vector<std::uint32_t> m_later_scratch;   // scratch of plan_issue(): per output, its writes still to tell
    /// A write share_room issued whole: its output's issued count when it did, and the queued writes to that output
    /// finishing in the same turn after it.
    struct IssueMark {
        std::uint32_t id;
        double issued;
        std::uint32_t behind;
    };
    std::vector<IssueMark> m_issue_marks;         // scratch of plan_issue(): in the pending order
    std::vector<std::uint32_t> m_turn_scratch;    // scratch of share_room(): per output, writes finishing in a turn
    std::vector<double> m_inject_units;           // per GPU: its injection buffer, in credits (packets or flits)
    /// What launch() and decide_bursts() read of a window (a GPU's outstanding limit, a channel's credits) besides its load: its
    /// capacity, copied from the solver beside what bursts hold of it, so that the two are one cache line, not
    /// a line of the held amounts and one of the solver's resource record (at 1,024 GPUs a miss each, per window, per flow).
    struct Window {
        double held = 0;      // what bursts hold of it
        double capacity = 0;  // the solver's capacity of the resource (a window's is fixed once it is added; the
                              // incast gates, which change theirs, are never windows, so theirs is not read)
    };
    std::vector<Window> m_windows;                // per resource
    // Per GPU: how long its window (gpus.max_outstanding) held paced flows back (window_full_ps), summed up
    // to `since`, and since when it has been full (~0: it is not). Apart from Window, which launch() reads
    // per flow for every resource: the GPU windows are a few of those, read only when a solve moves them.
    struct WindowFull {
        std::uint64_t since = ~std::uint64_t(0);
        std::uint64_t ps = 0;
    };
    std::vector<WindowFull> m_window_full;
    std::vector<std::int32_t> m_window_gpu;       // per resource: the GPU whose window it is, -1: none
    bool gpu_window(std::uint32_t resource) const {  // a GPU's window (gpus.max_outstanding), not a buffer's credits
        return resource < m_window_gpu.size() && m_window_gpu[resource] >= 0;
    }
    std::vector<std::uint32_t> m_solved_windows;  // the GPU windows a solve is moving the load of
    void settle_window(std::uint32_t resource, std::uint64_t now);
    void mark_window(std::uint32_t resource, std::uint64_t now);
    std::vector<std::vector<std::pair<std::uint32_t, double>>> m_holds;  // per burst: (resource, amount)
    std::vector<std::uint32_t> m_free_holds;
    std::vector<FlowExtension*> m_hold_owner;     // per burst: the extension whose answer gives its room back
    void give_room_back(std::uint32_t list);
    struct Paced {
        std::uint32_t resource;
        double weight;       // per payload byte, as the solver takes it
        double per_packet;   // what one packet holds of it
        bool first = false;  // served first where it is a use (a read's requests' credits: activate, decide_bursts)
    };
    std::vector<Paced> m_paced;                   // scratch of start_flow
    /// A flow launched in this instant whose burst waits for the others launched with it (decide_bursts).
    /// Its uses and windows are m_pending_uses[uses, uses + n_uses) and m_pending_paced[paced, paced + n_paced).
    struct Pending {
        std::uint32_t id = 0;
        std::uint32_t uses = 0, n_uses = 0, paced = 0, n_paced = 0;
    };
    // This instant's waiting flows, their uses and windows appended in two arrays that keep their room from one
    // instant to the next. Why not a pair of vectors per record: at 1,024 GPUs in lockstep 16,384 flows wait in
    // one instant, and each record's two heap blocks were cold lines to write and to read back (bench/RESULTS.md).
    std::vector<Pending> m_pending;
    std::vector<FlowSolver::Use> m_pending_uses;
    std::vector<Paced> m_pending_paced;
    std::vector<std::uint32_t> m_pending_order;  // scratch of decide_bursts(): m_pending's, smaller flows first
    std::vector<double> m_pending_link_rate;     // scratch of decide_bursts(): per pending flow, what its links allow it
    std::vector<std::uint32_t> m_sharing;        // scratch of decide_bursts(), per resource: the flows still to take
                                                 // their share of its room (zero between calls)
    /// activate()'s last two answers for flows on a route (m_activations[2 r] and [2 r + 1] for m_routes
    /// index r): a flow's uses, the windows' pacing and its round trip follow from its route, size, framing
    /// and window alone, and a collective's flows on a route repeat those (every chunk of a step the same
    /// size), so the walk over both routes' links, with a division per link, is done once per kind of flow.
    /// Two, because a step sends a write and then its flag on the same route: with one answer each
    /// replaced the other, and every flow walked its route.
    struct Activation {
        std::uint64_t bytes = ~std::uint64_t(0), packet_bytes = 0, turnaround_ps = 0;
        std::uint32_t packets = 0, window = 0;
        MessageFraming framing;
        bool read = false;
        std::vector<FlowSolver::Use> uses;
        std::vector<Paced> paced;
        std::uint64_t round_trip = 0;
        double incast_weight = 0;
        std::uint8_t newer = 0;  // read in a pair's first record only: which of the two was used last
        bool same(const Flow& f, std::uint32_t win, std::uint64_t turnaround) const {
            return bytes == f.bytes && packet_bytes == f.packet_bytes && packets == f.packets && read == f.read &&
                   window == win && turnaround_ps == turnaround && framing.frames == f.framing.frames &&
                   framing.first == f.framing.first && framing.last == f.framing.last;
        }
    };
    std::vector<Activation> m_activations;

    FlowSolver m_solver;
    std::vector<Flow> m_flows;
    std::vector<std::uint32_t> m_free_flows;
    // Per flow slot, surviving reuse: its version, bumped at every rate change and when it ends, so
    // that older Finish actions are stale.
    std::vector<std::uint32_t> m_next_version;
    std::uint64_t m_solve_at = ~std::uint64_t(0);
    std::vector<std::int32_t> m_route_index;    // src * gpus + dst -> m_routes index (-1: not yet built)
    std::vector<Route> m_routes;
    std::vector<double> m_route_at_node, m_route_on_link;  // scratch of route(), zero between calls
    std::vector<std::uint32_t> m_route_touched;            // scratch of route(): the links it gave a share
    std::unordered_map<std::uint64_t, std::uint32_t> m_injection_index;  // (src * links + first link) * gpus + dst -> m_injection
    std::vector<Injection> m_injection;
    std::vector<std::vector<std::uint32_t>> m_injection_of_gpu;  // per GPU: its injection queues (m_injection)
    std::vector<FlowSolver::Use> m_uses;        // scratch of start_flow: links and ports

    PortTurns<FlowFabric> m_turns{ports()};  // one BEGIN_REQ / BEGIN_RESP at a time on each GPU port

    struct LinkCounters {
        LinkStats s;
        // What the flows of routes that spread (routing.spread) put on this link, each its share: summed
        // unrounded and rounded once in link_stats() (rounded flow by flow, a one-packet flag counted whole on
        // every equal-cost link: a spine's busy time 1.7% over its bins on hierarchical-16gpu). spread_overhead_ps
        // is rail's NIC processing time of the messages it sent (busy, no bytes).
        double spread_packets = 0, spread_bytes = 0, spread_headers = 0, spread_overhead_ps = 0;
    };
    std::vector<LinkCounters> m_links;
    /// What account_busy reads and writes of a link, apart from its statistics (LinkCounters: over
    /// 200 bytes on four cache lines, with the bins on the heap): it runs for every link a solve
    /// touches, and at hundreds of GPUs each of those lines was a cache miss.
    struct LinkBusy {
        double load = 0;              // wire bytes per second now
        std::uint64_t since = 0;      // load held since then
        double bytes_per_s = 0;       // a lane's rate
        std::uint64_t bin = kNoBin;   // the bin its busy time goes to now (kNoBin: none yet)
        float busy = 0;               // that bin's lane-ps busy so far; moved to busy_bins when the next begins
        float bin_capacity = 0;       // a bin's lane-ps: its lanes x the bin's width
        std::uint32_t flag_lanes = 0; // its lanes' entries in m_flag_free
    };
    static constexpr std::uint64_t kNoBin = ~std::uint64_t(0);
    std::vector<LinkBusy> m_busy;
    /// Per lane of each link (LinkBusy::flag_lanes): when it has sent the flags timed alone that were put on
    /// it as their first link (flag_start).
    std::vector<std::uint64_t> m_flag_free;
    std::uint64_t flag_start(const Flow& f, std::uint64_t now);
    std::vector<std::uint32_t> m_solved_links;  // scratch of solve(): the links of the components it solved
    std::vector<PairStats> m_route_pairs;  // per route (m_routes): what its pair's flows carried, counted when they finish

    // NVLink SHARP (fabric.switch.nvls): off when m_reduce_bytes_per_s is 0.
    double m_reduce_bytes_per_s = 0;          // the reduction engine's rate (bytes of member data per second)
    std::uint64_t m_nvls_latency_ps = 0;      // the multimem unit's latency, once per access
    std::uint32_t m_reduce_resource = 0;      // the reduction engine in the solver
    std::vector<std::uint32_t> m_uplink, m_downlink;  // per GPU: its link to / from the switch
    std::vector<NvlsOp> m_nvls_ops;
    std::vector<std::uint32_t> m_free_nvls;
    std::unique_ptr<PacketPool> m_nvls_pool;  // the payloads of the switch's own copies and reads
    NvlsCounters m_nvls_counters;

    /// A switch's link into a GPU whose input buffers are deep (flow_incast.cpp): the senders push into
    /// them at their own rates and the link drains the backlog first in, first out.
    struct Incast {
        std::uint32_t link = 0;
        double capacity = 0;     // wire bytes per second, all lanes
        double service = 0;      // what it drains at: the capacity less the solver's flows on the link
        double arrivals = 0;     // wire bytes per second its flows bring now
        double backlog = 0;      // wire bytes queued, as of `since`
        std::uint64_t since = 0;
        std::int32_t flows = 0;  // flows counted in `arrivals`
        // Back-pressure: its flows' use of the link in the solver (`gate`), open (kOpenGate times the link)
        // until the backlog fills the buffers that feed the link (`buffer` bytes), then the drain rate of that
        // moment until it has emptied to half of them.
        std::uint32_t gate = 0;
        double buffer = 0;
        bool closed = false;
        std::uint64_t full_ps = ~std::uint64_t(0);  // when an IncastFull action stands for it (~0: none)
        std::uint32_t version = 0;                  // bumped at each booking: older IncastFull actions are stale
        /// A queued write's bytes all out at `at_ps` (its arrivals end then), unless re-rated since (`stamp`).
        struct Drain {
            std::uint64_t at_ps;
            std::uint64_t stamp;  // unique over the run: a flow slot used again never matches an old one
            std::uint32_t flow;
        };
        std::vector<Drain> drains;  // a min-heap by time (drains_later)
        /// The heap's order: the earliest on top.
        static bool drains_later(const Drain& a, const Drain& b) { return a.at_ps > b.at_ps; }
    };
    std::vector<Incast> m_incasts;
    std::vector<std::int32_t> m_incast_of_link;  // per link: its queue in m_incasts, -1: none
    std::uint64_t m_incast_stamps = 0;            // arrival rates set so far (Flow::incast_stamp)
    void setup_incast(const Params& p);
    void flow_incast_to(Incast& q, std::uint64_t t);
    void set_busy_load(Incast& q);
    void advance_incast(Incast& q, std::uint64_t now);
    void set_arrival(Incast& q, Flow& f, double r);
    void count_incast(Flow& f, double rate);
    void reserve_incast(Incast& q, std::uint64_t now);
    void settle_busy(std::uint32_t link, std::uint64_t now);
    std::uint64_t incast_wait_ps(const Flow& f);
    std::uint64_t queue_wait_ps(std::int32_t incast);
    double queued_unanswered(const Issuer& is, std::uint64_t now) const;
    void stretch_window(std::uint32_t gpu, std::uint64_t round_trip, std::uint64_t wait);
    void book_full(Incast& q);
    void incast_full(std::uint32_t queue, std::uint32_t version);

    TimingWheel<Action> m_actions;
};

}  // namespace eidola
