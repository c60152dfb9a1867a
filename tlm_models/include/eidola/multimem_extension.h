// A multimem access (NVLink SHARP, "NVLS"): a GPU's load or store to a multicast group's window,
// which a switch that can reduce and multicast serves on behalf of every member of the group.
//
// - Store (multimem.st): a write of `length` bytes at window offset `offset`. The switch writes a
//   copy into every member's memory at that offset, the issuer's own included, and answers the
//   issuer once every member has acknowledged its copy: the acknowledgement means "every member
//   has it", so a later fence or release covers all the copies.
// - LoadReduce (multimem.ld_reduce): a read of `length` bytes at window offset `offset`. The
//   switch reads that range from every member, sums the members' data element by element, and
//   answers the issuer with one response of `length` bytes.
//
// The transaction itself is an ordinary write or read addressed to the issuer's own window at
// `offset` (so its address, command and length say what a plain access would), with this
// extension attached. The extension is ignorable in the TLM-2.0 sense: it is a plain data
// record, and a bus that does not know it forwards the payload untouched, which then reaches the
// issuer's own memory as a plain access. Eidola refuses to run multimem ops on a fabric that
// does not declare NVLS, so that silent fallback never happens in its own platforms; a
// third-party switch model implements NVLS by looking for this extension on requests.
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// What a multimem access asks of the switch.
enum class MultimemKind : std::uint8_t {
    LoadReduce = 0,  ///< multimem.ld_reduce: read from every member, sum, answer with one response
    Store = 1,       ///< multimem.st: replicate the write to every member, answer once all have it
};

/// The multicast group and kind of a multimem access; attached to every transaction of one.
class MultimemExtension : public tlm::tlm_extension<MultimemExtension> {
public:
    MultimemKind kind = MultimemKind::Store;  ///< load-reduce or store
    std::uint32_t group = 0;                  ///< the group's index among the profile's multicast groups
    const std::uint32_t* members = nullptr;   ///< the member GPUs (address-map windows), distinct
    std::uint32_t member_count = 0;           ///< how many members `members` points to
    std::uint32_t initiator = 0;              ///< the issuing GPU (a member or not)
    std::uint64_t offset = 0;                 ///< the access's offset in every member's window

    tlm::tlm_extension_base* clone() const override { return new MultimemExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override {
        *this = static_cast<const MultimemExtension&>(other);
    }
};

}  // namespace eidola
