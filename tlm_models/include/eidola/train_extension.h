// A packet train: one TLM transaction that stands for `packets` back-to-back packets of one
// transfer, each of at most `packet_bytes`. An eidolon GPU issues trains when its `train`
// parameter is above 1, so a hundred-MiB message costs a few thousand transactions instead of a
// million. The extension is ignorable: a fabric that does not know it sees one long transaction
// (and times it as one packet); ours charges every packet's header, holds the buffer space of all
// of them, lets the train's first packet move on before its last, and delivers the train when
// its first packet is in, with the spacing of the rest (the GPU frees outstanding slots at that
// pace and completes the train when its last acknowledgement is due). Inside a train, packets of
// other flows cannot interleave, so a fabric carries trains only where no other flow shares the
// link, and refuses the others at once with TLM_BURST_ERROR_RESPONSE: the GPU then sends that
// destination packets (see docs/fabrics.md, "Packet trains").
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// The packets one transaction stands for.
class TrainExtension : public tlm::tlm_extension<TrainExtension> {
public:
    std::uint32_t packets = 1;       ///< packets in the train (>= 2 when attached)
    std::uint32_t packet_bytes = 0;  ///< payload of each packet but the last (the GPU's max_payload)
    /// Set by a fabric on delivery: the time between the train's packets as they arrive, so the
    /// receiver can spread what each packet would have done (0: they all arrived at once).
    std::uint64_t spacing_ps = 0;

    tlm::tlm_extension_base* clone() const override { return new TrainExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const TrainExtension&>(other);
    }
};

/// Packets `trans` stands for: its train's length, else 1.
inline std::uint32_t train_packets(const tlm::tlm_generic_payload& trans) {
    const TrainExtension* t = trans.get_extension<TrainExtension>();
    return t ? t->packets : 1;
}

}  // namespace eidola
