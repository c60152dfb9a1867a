// A write that carries its own flag (a put: NCCL's LL and LL128 protocols put the flag in the
// data). Every transaction of the put carries this extension; the target counts the bytes that
// have landed per (initiator, put) and, once all `total_bytes` are in its memory, applies the
// atomic to the flag word, which wakes waiters as any flag write does. Why bytes and not parts:
// the initiator may cut a put into packets, trains or flows as its window and the fabric allow,
// and parts may land out of order (several lanes, spread routing); the byte total is known at the
// start and counts right however the put was cut. The extension is ignorable: a fabric or bridge
// that does not know it forwards the payload untouched, and a target that does not know it sees
// plain writes (the flag is then never set, as a real LL receiver would never see its line flags).
#pragma once

#include <cstdint>

#include <tlm>

#include "eidola/program.h"

namespace eidola {

/// The flag update a put applies at its target once its last byte has landed.
class LandingFlagExtension : public tlm::tlm_extension<LandingFlagExtension> {
public:
    std::uint64_t flag_address = 0;  ///< global address of the flag word (the target masks it to its window)
    AtomicOp op = AtomicOp::Add;     ///< Add or Set
    std::int64_t value = 0;          ///< operand of the atomic
    std::uint32_t initiator = 0;     ///< the issuing GPU (with put_id, names the put at the target)
    std::uint64_t put_id = 0;        ///< unique among the initiator's puts
    std::uint64_t total_bytes = 0;   ///< bytes of the whole put, over all its transactions

    tlm::tlm_extension_base* clone() const override { return new LandingFlagExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const LandingFlagExtension&>(other);
    }
};

}  // namespace eidola
