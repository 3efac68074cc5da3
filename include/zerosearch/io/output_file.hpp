#pragma once
// Writing output files safely (docs/usage.md, "Output files"). Every file zerosearch writes
// (-o, --record, --plot, sidecars, profiles) goes through here:
// - a regular file, or a new one, is written to a temporary file in the same folder and renamed
//   over it, so readers see the old or the new content, never half of it; the new file keeps
//   the old one's mode and, where the process may set it, its owner;
// - a regular file with other hard links is rewritten in place (after the new content is
//   complete in a temporary file), so every link sees the new content;
// - a symbolic link is followed and its target written by these rules;
// - a character device, FIFO or socket (/dev/null, /dev/stdout, a named pipe), and any path
//   under /dev or /proc, is opened and written through, never replaced;
// - a file the user may not write is an error, whatever the folder allows; so is a missing
//   folder, unless the caller asks for it to be created (--record's logs/).
// Temporary files are removed when the process gets SIGINT, SIGTERM or SIGHUP; the signal
// then ends the process as it would have (exit status 128 + signal).
#include <filesystem>
#include <functional>
#include <ostream>
#include <string>

namespace zerosearch {

/// How check_output found a path.
enum class OutputKind {
  /// No file yet: created atomically.
  new_file,
  /// A regular file: replaced atomically (or rewritten in place when hard-linked).
  regular_file,
  /// A device, FIFO or socket: written through.
  stream,
};

struct OutputTarget {
  /// As the user gave it (for messages).
  std::filesystem::path requested;
  /// Where the bytes go: `requested` with symbolic links resolved.
  std::filesystem::path resolved;
  OutputKind kind = OutputKind::new_file;
  /// Missing folders are created before writing.
  bool create_folders = false;
};

/// Checks, before any work, that `path` can be written by the rules above; `flag` names the
/// option in messages ("-o", "--record"). Creates nothing. Throws InputError naming the path
/// and the reason.
[[nodiscard]] OutputTarget check_output(const std::filesystem::path& path, const std::string& flag,
                                        bool create_folders = false);

/// The same file for two outputs (after following links)?
[[nodiscard]] bool same_output(const OutputTarget& a, const OutputTarget& b);

/// Writes what `write` produces to `target` by the rules above. Throws InputError naming the
/// path when it cannot; on any failure an existing file is left as it was.
void write_output(const OutputTarget& target, const std::function<void(std::ostream&)>& write);

/// Installs the SIGINT/SIGTERM/SIGHUP handlers that remove temporary files. Idempotent.
void install_output_cleanup();

} // namespace zerosearch
