// Where a transaction sits in its message: the transfer one workgroup op makes to one peer (a
// write, put or read of nbytes), which the GPU cuts into packets, trains or flows. A NIC frames a
// message, not a GPU packet: it sends it as network packets of one MTU each, counted from the
// message's first byte, and takes its per-message cost once (packet_fabric.h, "rail"). The GPU
// attaches this only to transactions that are part of a longer message; a transaction without it
// is a message of its own. The extension is ignorable: other fabrics and targets never read it.
#pragma once

#include <cstdint>

#include <tlm>

namespace eidola {

/// The transaction's bytes are [offset, offset + data length) of a message of `bytes` bytes.
class MessageExtension : public tlm::tlm_extension<MessageExtension> {
public:
    std::uint64_t offset = 0;  ///< bytes of the message before this transaction's first
    std::uint64_t bytes = 0;   ///< the whole message's bytes

    tlm::tlm_extension_base* clone() const override { return new MessageExtension(*this); }
    void copy_from(const tlm::tlm_extension_base& other) override { *this = static_cast<const MessageExtension&>(other); }
};

/// How a NIC frames transaction `t` (data length `length`): `frames` network packets start in its
/// bytes (MTU-sized, counted from its message's first byte), `first` it holds the message's first
/// byte, `last` its last.
struct MessageFraming {
    std::uint32_t frames = 0;
    bool first = true;
    bool last = true;
};

/// The framing of `t` in MTUs of `mtu` bytes; a zero-length transaction is one frame.
inline MessageFraming message_framing(const tlm::tlm_generic_payload& t, std::uint64_t mtu) {
    const std::uint64_t length = t.get_data_length();
    std::uint64_t offset = 0, total = length;
    if (const MessageExtension* m = t.get_extension<MessageExtension>()) {
        offset = m->offset;
        total = m->bytes;
    }
    MessageFraming f;
    f.first = offset == 0;
    f.last = offset + length >= total;
    const std::uint64_t frames = length == 0 ? 1 : (offset + length + mtu - 1) / mtu - (offset + mtu - 1) / mtu;
    f.frames = std::uint32_t(frames);
    return f;
}

}  // namespace eidola
