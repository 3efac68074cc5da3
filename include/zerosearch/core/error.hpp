#pragma once
// Errors: bad input from the user (flags, data files) is an InputError; the CLI prints it as
// "zerosearch: error: <message>" and exits 2. Anything else that escapes is an internal failure.
#include <stdexcept>
#include <string>

namespace zerosearch {

/// Bad input: a flag, a value or a data file the user can fix. The message names the bad value
/// and what is allowed, on one line.
class InputError : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

} // namespace zerosearch
