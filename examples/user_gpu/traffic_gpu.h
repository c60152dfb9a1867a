// A user's own GPU model, taking one GPU slot among eidolons (the paper's setup: one detailed
// GPU among eidolons). It knows nothing of Eidola: standard SystemC/TLM-2.0 headers only, a
// loosely timed initiator and target.
//
// At `start_ns` it writes `nbytes` to `data_address` in 256-byte transactions, then stores 1 in
// the 8-byte word at `flag_address` (a plain write: it does not know Eidola's atomic extension,
// so the word is overwritten, not incremented). Its memory keeps 8-byte words for whoever writes
// to it and counts the traffic.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace user {

class TrafficGpu : public sc_core::sc_module {
public:
    tlm_utils::simple_initiator_socket<TrafficGpu> initiator;  ///< LT: b_transport towards the fabric
    tlm_utils::simple_target_socket<TrafficGpu> target;        ///< LT: b_transport into its memory
    std::uint64_t writes_received = 0;                         ///< writes its memory served

    SC_HAS_PROCESS(TrafficGpu);
    TrafficGpu(sc_core::sc_module_name name, double start_ns, unsigned long long data_address, int nbytes,
               unsigned long long flag_address)
        : sc_module(name), initiator("initiator"), target("target"), m_start(start_ns, sc_core::SC_NS),
          m_data(data_address), m_nbytes(nbytes), m_flag(flag_address) {
        target.register_b_transport(this, &TrafficGpu::serve);
        SC_THREAD(run);
    }

private:
    void write(std::uint64_t address, unsigned char* data, unsigned len) {
        tlm::tlm_generic_payload t;
        t.set_command(tlm::TLM_WRITE_COMMAND);
        t.set_address(address);
        t.set_data_ptr(data);
        t.set_data_length(len);
        t.set_streaming_width(len);
        t.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
        sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
        initiator->b_transport(t, delay);
        if (t.is_response_error()) SC_REPORT_ERROR(name(), "write failed");
        wait(delay);
    }
    void run() {
        wait(m_start);
        std::vector<unsigned char> chunk(256, 0xab);
        for (int done = 0; done < m_nbytes; done += 256)
            write(m_data + std::uint64_t(done), chunk.data(), unsigned(std::min(256, m_nbytes - done)));
        std::int64_t one = 1;
        write(m_flag, reinterpret_cast<unsigned char*>(&one), 8);
    }
    void serve(tlm::tlm_generic_payload& t, sc_core::sc_time& delay) {
        const std::uint64_t word = t.get_address() / 8;
        if (t.is_write()) {
            ++writes_received;
            if (t.get_data_length() == 8) std::memcpy(&m_words[word], t.get_data_ptr(), 8);
        } else if (t.is_read()) {
            std::memset(t.get_data_ptr(), 0, t.get_data_length());
            if (t.get_data_length() == 8 && m_words.count(word)) std::memcpy(t.get_data_ptr(), &m_words[word], 8);
        }
        delay += sc_core::sc_time(100, sc_core::SC_NS);
        t.set_response_status(tlm::TLM_OK_RESPONSE);
    }

    sc_core::sc_time m_start;
    std::uint64_t m_data;
    int m_nbytes;
    std::uint64_t m_flag;
    std::map<std::uint64_t, std::int64_t> m_words;
};

}  // namespace user
