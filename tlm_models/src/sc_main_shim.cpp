// Debian's libsystemc.so is linked with BIND_NOW and leaves sc_main undefined, so it cannot be
// dlopen()ed by a process that has none (Python). Loading this tiny library first, with
// RTLD_GLOBAL, supplies one. It is kept out of libeidola_tlm.so so that C++ programs can link
// their own sc_main.
extern "C" int sc_main(int, char**) { return 0; }
