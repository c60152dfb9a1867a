// What the C++ tests of TLM behaviour share: their one assertion, and the interfaces of a test
// model's sockets that the test does not exercise.
#pragma once

#include <cstdio>
#include <string>

#include <systemc>
#include <tlm>

namespace eidola::test {

/// Failures so far.
inline int& failures() {
    static int count = 0;
    return count;
}

/// Prints `what`, as passed or failed, and counts a failure.
inline void expect(bool ok, const std::string& what) {
    std::printf("%s %s\n", ok ? "ok:  " : "FAIL:", what.c_str());
    if (!ok) ++failures();
}

/// Prints the count of failures; the test program's exit status.
inline int verdict() {
    std::printf("%d failed\n", failures());
    return failures() ? 1 : 0;
}

/// A forward path that answers what the test does not send it: b_transport with OK, no DMI, no debug.
struct QuietForward : tlm::tlm_fw_transport_if<> {
    void b_transport(tlm::tlm_generic_payload& t, sc_core::sc_time&) override { t.set_response_status(tlm::TLM_OK_RESPONSE); }
    bool get_direct_mem_ptr(tlm::tlm_generic_payload&, tlm::tlm_dmi&) override { return false; }
    unsigned int transport_dbg(tlm::tlm_generic_payload&) override { return 0; }
};

/// A backward path that takes nothing the test sends it: every phase completed, DMI ignored.
struct QuietBackward : tlm::tlm_bw_transport_if<> {
    tlm::tlm_sync_enum nb_transport_bw(tlm::tlm_generic_payload&, tlm::tlm_phase&, sc_core::sc_time&) override {
        return tlm::TLM_COMPLETED;
    }
    void invalidate_direct_mem_ptr(sc_dt::uint64, sc_dt::uint64) override {}
};

}  // namespace eidola::test
