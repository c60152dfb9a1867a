// The interface a socket is bound to, read from the socket once and then kept by the caller.
// Why: a call through `socket->` reads the port object (sc_port_b::m_interface, checked for null
// on every call), a separate, large object that is one more cold cache line per transaction when
// 1,024 GPUs' states do not fit the cache. Binding is final once simulation runs, so a pointer
// kept next to the caller's hot state gives the same interface.
#pragma once

#include <cstddef>

namespace eidola {

/// `socket`'s bound interface, resolved into `cached` on first use (not at construction: sockets
/// are bound later, during elaboration; a call before binding still reports it through the port).
template <class Socket, class Interface>
[[gnu::always_inline]] inline Interface& bound_interface(Socket& socket, Interface*& cached) {
    if (!cached) cached = socket.operator->();
    return *cached;
}

/// The same for socket `i` of a vector of sockets. Why apart: indexing the vector only on first
/// use keeps its storage out of the per-call path too.
template <class Sockets, class Interface>
[[gnu::always_inline]] inline Interface& bound_interface(Sockets& sockets, std::size_t i, Interface*& cached) {
    if (!cached) cached = sockets[i].operator->();
    return *cached;
}

}  // namespace eidola
