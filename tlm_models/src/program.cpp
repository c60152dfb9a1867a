#include "eidola/program.h"

#include "eidola/atomic_extension.h"

namespace eidola {

namespace {
template <std::size_t N>
EnumNames names(const char* key, const char* const (&values)[N]) {
    return EnumNames{key, values, N};
}
}  // namespace

const char* cond_text(Cond cond) { return kCondNames[static_cast<int>(cond)]; }

const char* wait_mode_name(WaitMode mode) { return kWaitModeNames[static_cast<int>(mode)]; }

std::vector<EnumNames> shared_enums() {
    return {names("op_kind", kOpKindNames), names("cond", kCondNames), names("wait_mode", kWaitModeNames),
            names("atomic", kAtomicOpNames), names("compute_unit", kComputeUnitNames),
            names("write_mode", kWriteModeNames), names("release_scope", kReleaseScopeNames)};
}

bool cond_holds(Cond cond, std::int64_t lhs, std::int64_t rhs) {
    switch (cond) {
        case Cond::Eq: return lhs == rhs;
        case Cond::Ne: return lhs != rhs;
        case Cond::Ge: return lhs >= rhs;
        case Cond::Gt: return lhs > rhs;
        case Cond::Le: return lhs <= rhs;
        case Cond::Lt: return lhs < rhs;
    }
    return false;
}

std::int64_t AtomicExtension::apply(std::int64_t old_value) const {
    switch (op) {
        case AtomicOp::Add: return static_cast<std::int64_t>(static_cast<std::uint64_t>(old_value) +
                                                             static_cast<std::uint64_t>(operand));
        case AtomicOp::Set: return operand;
        case AtomicOp::Cas: return old_value == compare ? operand : old_value;
    }
    return old_value;
}

}  // namespace eidola
