#pragma once

namespace zerosearch {
inline constexpr const char* kVersion = "0.1.0";
}
