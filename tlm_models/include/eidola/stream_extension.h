// Which of its initiator's streams a transaction belongs to: for an eidolon GPU, the workgroup
// that issued it. A GPU's port that arbitrates per stream (packet fabric, switch.injection_order:
// round_robin) takes the streams' packets in turn, as a GPU's link port takes its SMs' (CUs')
// stores packet by packet. The extension is ignorable: a transaction without it is stream 0, and
// other fabrics and targets never read it.
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// The transaction's stream at its initiator (a GPU: the issuing workgroup).
class StreamExtension : public tlm::tlm_extension<StreamExtension> {
public:
    std::uint32_t stream = 0;  ///< the initiator's stream (a GPU's workgroup)

    tlm::tlm_extension_base* clone() const override { return new StreamExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const StreamExtension&>(other); }
};

}  // namespace eidola
