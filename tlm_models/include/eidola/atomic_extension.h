// Atomics ride on an ordinary TLM write of 8 bytes plus this extension. The extension is
// ignorable: an interconnect that does not know it forwards the payload untouched, and a
// target that does not know it sees a plain 8-byte write of the operand.
#pragma once

#include <cstdint>

#include <tlm>

#include "eidola/program.h"

namespace eidola {

/// An atomic operation on the 8-byte word the payload addresses.
class AtomicExtension : public tlm::tlm_extension<AtomicExtension> {
public:
    AtomicOp op = AtomicOp::Add;  ///< add, set or compare-swap
    std::int64_t operand = 0;     ///< value added or stored
    std::int64_t compare = 0;     ///< expected old value of a compare-swap

    tlm::tlm_extension_base* clone() const override { return new AtomicExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const AtomicExtension&>(other);
    }

    /// The word's new value after applying this atomic to `old_value`.
    std::int64_t apply(std::int64_t old_value) const;
};

}  // namespace eidola
