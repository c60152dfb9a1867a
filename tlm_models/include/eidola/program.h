// Workgroup programs in the compact binary form the models replay.
// Python encodes profiles into these arrays (bridge/eidola/_encode.py mirrors the layout);
// C++ users can fill them directly. One flat op array serves every workgroup of every GPU.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace eidola {

/// What an op does.
enum class OpKind : std::uint8_t { Compute = 0, Write = 1, Read = 2, Signal = 3, Wait = 4, Local = 5, Fence = 6, Put = 7 };
/// Names of the OpKind values, indexed by value (the profile's op names).
inline constexpr const char* kOpKindNames[] = {"compute", "write", "read", "signal", "wait", "local", "fence", "put"};

/// When a write completes for its workgroup (Op::mode of a Write).
/// Posted: once its packets are issued (a GPU store); Blocking: once every packet is acknowledged.
enum class WriteMode : std::uint8_t { Posted = 0, Blocking = 1 };
/// Names of the WriteMode values, indexed by value.
inline constexpr const char* kWriteModeNames[] = {"posted", "blocking"};

/// Which earlier writes a signal (a release) waits for (Op::mode of a Signal).
/// Workgroup: every earlier write of the workgroup is acknowledged; Peer: only those to the signal's GPU.
enum class ReleaseScope : std::uint8_t { Workgroup = 0, Peer = 1 };
/// Names of the ReleaseScope values, indexed by value.
inline constexpr const char* kReleaseScopeNames[] = {"workgroup", "peer"};

/// Condition of a wait: flag <cond> value.
enum class Cond : std::uint8_t { Eq = 0, Ne = 1, Ge = 2, Gt = 3, Le = 4, Lt = 5 };
/// Texts of the Cond values, indexed by value.
inline constexpr const char* kCondNames[] = {"==", "!=", ">=", ">", "<=", "<"};

/// How a workgroup waits for a flag.
enum class WaitMode : std::uint8_t { Poll = 0, SpinYield = 1, SyncMon = 2 };
/// Names of the WaitMode values, indexed by value.
inline constexpr const char* kWaitModeNames[] = {"poll", "spin_yield", "syncmon"};

/// Atomic operation of a signal.
enum class AtomicOp : std::uint8_t { Add = 0, Set = 1, Cas = 2 };
/// Names of the AtomicOp values, indexed by value.
inline constexpr const char* kAtomicOpNames[] = {"add", "set", "cas"};

/// Unit of a compute op's duration (Op::mode of a Compute).
enum class ComputeUnit : std::uint8_t { Ns = 0, Cycles = 1 };
/// Names of the ComputeUnit values, indexed by value.
inline constexpr const char* kComputeUnitNames[] = {"ns", "cycles"};

/// A shared enum's value names as the catalog lists them ("enums": {name: [value names]}).
struct EnumNames {
    const char* name;            ///< key in the catalog, e.g. "op_kind"
    const char* const* values;   ///< names indexed by value
    std::size_t count;           ///< number of values
};
/// Every enum the Python encoder mirrors, for the catalog.
std::vector<EnumNames> shared_enums();

/// One op of a workgroup program. Field use per kind:
/// - Compute: time_ps, or `value` cycles of the GPU clock when `mode` is ComputeUnit::Cycles.
/// - Write/Read: `peer`, `offset` (byte offset in the peer's window), `nbytes`; a write's `mode` is its WriteMode.
/// - Signal: `peer`, `offset` (the flag's offset), `sub` (AtomicOp), `value`, `compare`, `mode` (ReleaseScope),
///   `option` (1: overlap, the workgroup goes on while the release waits for its writes' acknowledgements).
/// - Put: a posted write (`peer`, `offset`, `nbytes`) carrying its own flag: once its last byte has landed, the
///   peer's flag at window offset `compare` gets AtomicOp `sub` (Add or Set) with `value`; no release.
/// - Fence: no operands; it completes once every earlier write and signal of the workgroup is acknowledged.
/// - Wait: `offset` (the flag's offset), `sub` (Cond), `mode` (WaitMode), `option` (SyncMon wake-all 1, wake-one 0),
///   `value`, `time_ps` (poll interval), `time2_ps` (spin-yield maximum interval).
/// - Local: `offset` reads and `value` writes of `nbytes` each.
struct Op {
    std::uint8_t kind;      ///< OpKind
    std::uint8_t sub;       ///< Cond or AtomicOp
    std::uint8_t mode;      ///< WaitMode, ComputeUnit, WriteMode or ReleaseScope (by kind)
    std::uint8_t option;    ///< a Wait's SyncMon wake-all (1) or wake-one (0); a Signal's overlap (1) or not (0)
    std::int32_t peer;      ///< destination GPU of writes, reads and signals
    std::uint64_t offset;   ///< byte offset in the window, or read count of a Local op
    std::uint64_t nbytes;   ///< payload bytes
    std::int64_t value;     ///< operand, wait value, cycles, or write count of a Local op
    std::int64_t compare;   ///< compare-swap's expected value; a Put's flag offset
    std::int64_t time_ps;   ///< compute time, or poll interval
    std::int64_t time2_ps;  ///< spin-yield maximum interval
};
static_assert(sizeof(Op) == 56, "Op layout is mirrored by the Python encoder");

/// Where one workgroup's program sits in the op array.
struct ProgramEntry {
    std::int32_t gpu;     ///< GPU index
    std::int32_t wg;      ///< workgroup index on that GPU
    std::int64_t first;   ///< index of its first op
    std::int64_t count;   ///< number of ops
};
static_assert(sizeof(ProgramEntry) == 24, "ProgramEntry layout is mirrored by the Python encoder");

/// The window layout shared by every GPU: flags first (8 bytes each), then data buffers.
struct WindowLayout {
    std::uint64_t flag_count = 0;            ///< number of 8-byte flag words at offset 0
    std::vector<std::string> flag_names;     ///< for reports; may be empty
};

/// Text of a condition ("==", ">=", ...).
const char* cond_text(Cond cond);
/// Name of a wait mode ("poll", "spin_yield", "syncmon").
const char* wait_mode_name(WaitMode mode);
/// Whether `lhs <cond> rhs` holds.
bool cond_holds(Cond cond, std::int64_t lhs, std::int64_t rhs);

}  // namespace eidola
