#include "zerosearch/io/output_file.hpp"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <streambuf>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "zerosearch/core/error.hpp"

namespace zerosearch {

namespace fs = std::filesystem;

namespace {

// ---- Temporary files to remove on a signal. Plain arrays: the handler may only call
// async-signal-safe functions (unlink, signal, raise).
constexpr int kSlots = 16;
constexpr std::size_t kPathMax = 4096;
char g_temp_paths[kSlots][kPathMax];
std::atomic<int> g_temp_used[kSlots];

extern "C" void remove_temps_and_reraise(int sig) {
  for (int i = 0; i < kSlots; ++i) {
    if (g_temp_used[i].load() != 0) {
      ::unlink(g_temp_paths[i]);
    }
  }
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

/// Registers `path` for removal on a signal; unregisters when destroyed.
class TempRegistration {
public:
  explicit TempRegistration(const fs::path& path) {
    const std::string& s = path.native();
    if (s.size() >= kPathMax) {
      return;
    }
    for (int i = 0; i < kSlots; ++i) {
      int expected = 0;
      // Claim the slot with 2 ("being written"), fill it, then publish it with 1.
      if (g_temp_used[i].compare_exchange_strong(expected, 2)) {
        std::memcpy(g_temp_paths[i], s.c_str(), s.size() + 1);
        g_temp_used[i].store(1);
        slot_ = i;
        return;
      }
    }
  }
  ~TempRegistration() {
    if (slot_ >= 0) {
      g_temp_used[slot_].store(0);
    }
  }
  TempRegistration(const TempRegistration&) = delete;
  TempRegistration& operator=(const TempRegistration&) = delete;

private:
  int slot_ = -1;
};

/// An output stream buffer over a file descriptor, 1 MiB at a time; records the first error.
class FdBuf : public std::streambuf {
public:
  explicit FdBuf(int fd) : fd_(fd), buffer_(std::size_t{1} << 20) {
    setp(buffer_.data(), buffer_.data() + buffer_.size());
  }
  ~FdBuf() override = default;
  FdBuf(const FdBuf&) = delete;
  FdBuf& operator=(const FdBuf&) = delete;
  [[nodiscard]] int error() const noexcept { return error_; }

protected:
  int_type overflow(int_type ch) override {
    if (!flush_buffer()) {
      return traits_type::eof();
    }
    if (!traits_type::eq_int_type(ch, traits_type::eof())) {
      *pptr() = traits_type::to_char_type(ch);
      pbump(1);
    }
    return traits_type::not_eof(ch);
  }
  int sync() override { return flush_buffer() ? 0 : -1; }

private:
  bool flush_buffer() {
    const char* p = pbase();
    std::size_t left = static_cast<std::size_t>(pptr() - pbase());
    while (left > 0 && error_ == 0) {
      const ssize_t n = ::write(fd_, p, left);
      if (n < 0) {
        if (errno == EINTR) {
          continue;
        }
        error_ = errno;
        break;
      }
      p += n;
      left -= static_cast<std::size_t>(n);
    }
    setp(buffer_.data(), buffer_.data() + buffer_.size());
    return error_ == 0;
  }

  int fd_;
  std::vector<char> buffer_;
  int error_ = 0;
};

[[noreturn]] void fail(const OutputTarget& t, const std::string& why) {
  throw InputError(fmt::format("cannot write '{}': {}", t.requested.string(), why));
}

/// Runs `write` into `fd`; returns 0 or the errno of the first failed write.
int write_fd(int fd, const std::function<void(std::ostream&)>& write) {
  FdBuf buf(fd);
  std::ostream out(&buf);
  write(out);
  out.flush();
  return buf.error() != 0 ? buf.error() : (out ? 0 : EIO);
}

class Fd {
public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) {
      ::close(fd_);
    }
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  [[nodiscard]] int get() const noexcept { return fd_; }
  /// Closes now; returns 0 or errno.
  int close() {
    const int fd = fd_;
    fd_ = -1;
    return fd >= 0 && ::close(fd) != 0 ? errno : 0;
  }

private:
  int fd_;
};

/// The descriptor a path names when it is one of this process's own (/dev/stdout,
/// /dev/stderr, /dev/fd/N, /proc/self/fd/N), else -1. Writing to the descriptor itself works
/// whoever owns the file behind it (a redirect made by another user's shell).
int own_descriptor(const fs::path& p) {
  const std::string s = p.lexically_normal().string();
  if (s == "/dev/stdout") {
    return 1;
  }
  if (s == "/dev/stderr") {
    return 2;
  }
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/"}) {
    const std::string pre(prefix);
    if (s.rfind(pre, 0) == 0 && s.size() > pre.size() &&
        s.find_first_not_of("0123456789", pre.size()) == std::string::npos &&
        s.size() - pre.size() < 9) {
      return std::stoi(s.substr(pre.size()));
    }
  }
  return -1;
}

bool under_dev_or_proc(const fs::path& p) {
  const std::string s = p.lexically_normal().string();
  return s.rfind("/dev/", 0) == 0 || s.rfind("/proc/", 0) == 0;
}

fs::path folder_of(const fs::path& p) {
  return p.has_parent_path() ? p.parent_path() : fs::path(".");
}

bool folder_writable(const fs::path& dir) { return ::access(dir.c_str(), W_OK | X_OK) == 0; }

OutputTarget check_resolved(OutputTarget t, int depth) {
  if (depth > 40) {
    fail(t, "too many levels of symbolic links");
  }
  const fs::path& p = t.resolved;
  if (const int fd = own_descriptor(t.requested); fd >= 0) {
    const int flags = ::fcntl(fd, F_GETFL);
    if (flags < 0 || (flags & O_ACCMODE) == O_RDONLY) {
      fail(t, "it is not open for writing");
    }
    t.kind = OutputKind::stream;
    return t;
  }
  if (under_dev_or_proc(t.requested) || under_dev_or_proc(p)) {
    struct stat st {};
    if (::stat(p.c_str(), &st) != 0) {
      fail(t, std::strerror(errno));
    }
    if (S_ISDIR(st.st_mode)) {
      fail(t, "it is a folder");
    }
    if (::access(p.c_str(), W_OK) != 0) {
      fail(t, "permission denied");
    }
    t.kind = OutputKind::stream;
    return t;
  }
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) {
    if (errno == ENOTDIR) {
      // A parent is a file: name it.
      fs::path dir = folder_of(p);
      std::error_code ec;
      while (dir.has_parent_path() && !fs::exists(dir, ec)) {
        dir = dir.parent_path();
      }
      fail(t, fmt::format("'{}' is not a folder", dir.string()));
    }
    if (errno != ENOENT) {
      fail(t, std::strerror(errno));
    }
    // A new file: its folder must exist (or be creatable) and be writable.
    fs::path dir = folder_of(p);
    std::error_code ec;
    if (!fs::exists(dir, ec)) {
      if (!t.create_folders) {
        fail(t, fmt::format("folder '{}' does not exist", dir.string()));
      }
      while (!dir.empty() && !fs::exists(dir, ec)) {
        dir = dir.parent_path();
      }
      if (dir.empty()) {
        dir = ".";
      }
    }
    if (!fs::is_directory(dir, ec)) {
      fail(t, fmt::format("'{}' is not a folder", dir.string()));
    }
    if (!folder_writable(dir)) {
      fail(t, fmt::format("folder '{}' is not writable", dir.string()));
    }
    t.kind = OutputKind::new_file;
    return t;
  }
  if (S_ISLNK(st.st_mode)) {
    std::error_code ec;
    const fs::path target = fs::read_symlink(p, ec);
    if (ec) {
      fail(t, ec.message());
    }
    t.resolved = target.is_absolute() ? target : folder_of(p) / target;
    return check_resolved(std::move(t), depth + 1);
  }
  if (S_ISDIR(st.st_mode)) {
    fail(t, "it is a folder");
  }
  if (S_ISBLK(st.st_mode)) {
    fail(t, "it is a block device");
  }
  if (::access(p.c_str(), W_OK) != 0) {
    fail(t, errno == EACCES || errno == EPERM || errno == EROFS
                ? fmt::format("the file is not writable ({})", std::strerror(errno))
                : std::string(std::strerror(errno)));
  }
  t.kind = S_ISREG(st.st_mode) ? OutputKind::regular_file : OutputKind::stream;
  return t;
}

void write_stream(const OutputTarget& t, const std::function<void(std::ostream&)>& write) {
  struct stat st {};
  int fd = -1;
  if (const int own = own_descriptor(t.requested); own >= 0) {
    std::cout.flush();
    fd = ::fcntl(own, F_DUPFD_CLOEXEC, 3);
  } else if (::stat(t.resolved.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string& s = t.resolved.native();
    if (fd >= 0 && s.size() < sizeof addr.sun_path) {
      std::memcpy(addr.sun_path, s.c_str(), s.size() + 1);
      // NOLINTNEXTLINE(cppcoreguidelines-pro-type-reinterpret-cast): the socket API.
      if (::connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        ::close(fd);
        fail(t, std::strerror(err));
      }
    }
  } else {
    // O_APPEND: /dev/stdout redirected to a file goes on after what is already there.
    fd = ::open(t.resolved.c_str(), O_WRONLY | O_APPEND | O_NOCTTY | O_CLOEXEC);
  }
  if (fd < 0) {
    fail(t, std::strerror(errno));
  }
  Fd file(fd);
  if (const int err = write_fd(file.get(), write); err != 0) {
    fail(t, std::strerror(err));
  }
  if (const int err = file.close(); err != 0) {
    fail(t, std::strerror(err));
  }
}

/// A unique temporary name in `dir` for `name`.
fs::path temp_name(const fs::path& dir, const fs::path& name) {
  static std::atomic<unsigned> counter{0};
  return dir / fmt::format(".{}.tmp.{}.{}", name.string(), ::getpid(), counter.fetch_add(1));
}

void copy_into(const OutputTarget& t, const fs::path& from) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC));
  Fd out(::open(t.resolved.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  if (in.get() < 0 || out.get() < 0) {
    fail(t, std::strerror(errno));
  }
  std::vector<char> buf(std::size_t{1} << 20);
  for (;;) {
    const ssize_t n = ::read(in.get(), buf.data(), buf.size());
    if (n < 0 && errno == EINTR) {
      continue;
    }
    if (n < 0) {
      fail(t, std::strerror(errno));
    }
    if (n == 0) {
      break;
    }
    for (ssize_t done = 0; done < n;) {
      const ssize_t w = ::write(out.get(), buf.data() + done, static_cast<std::size_t>(n - done));
      if (w < 0 && errno == EINTR) {
        continue;
      }
      if (w < 0) {
        fail(t, std::strerror(errno));
      }
      done += w;
    }
  }
  if (::fsync(out.get()) != 0 && errno != EINVAL) {
    fail(t, std::strerror(errno));
  }
  if (const int err = out.close(); err != 0) {
    fail(t, std::strerror(err));
  }
}

void write_file(const OutputTarget& t, const std::function<void(std::ostream&)>& write) {
  const fs::path& path = t.resolved;
  std::error_code ec;
  if (t.create_folders) {
    fs::create_directories(folder_of(path), ec);
    if (ec) {
      fail(t, fmt::format("cannot create folder '{}': {}", folder_of(path).string(), ec.message()));
    }
  }
  struct stat old {};
  const bool exists = ::stat(path.c_str(), &old) == 0;
  // A hard-linked file, or one whose folder we may not write, is rewritten in place once the
  // new content is complete; everything else is replaced by a rename.
  const bool in_place =
      exists && (old.st_nlink > 1 || !folder_writable(folder_of(path)));
  const fs::path dir = in_place ? fs::temp_directory_path(ec) : folder_of(path);
  const fs::path tmp = temp_name(dir, path.filename());
  const TempRegistration registration(tmp);
  Fd file(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666));
  if (file.get() < 0) {
    fail(t, std::strerror(errno));
  }
  const auto discard = [&](const std::string& why) {
    file.close();
    ::unlink(tmp.c_str());
    fail(t, why);
  };
  int err = 0;
  try {
    err = write_fd(file.get(), write);
  } catch (...) {
    file.close();
    ::unlink(tmp.c_str());
    throw;
  }
  if (err != 0) {
    discard(fmt::format("write failed: {}", std::strerror(err)));
  }
  if (exists && !in_place) {
    // Keep the old file's permissions and, where allowed, its owner.
    if (::fchmod(file.get(), old.st_mode & 07777) != 0) {
      discard(std::strerror(errno));
    }
    if ((old.st_uid != ::geteuid() || old.st_gid != ::getegid()) &&
        ::fchown(file.get(), old.st_uid, old.st_gid) != 0 && errno != EPERM) {
      discard(std::strerror(errno));
    }
  }
  if (::fsync(file.get()) != 0) {
    discard(fmt::format("write failed: {}", std::strerror(errno)));
  }
  if (file.close() != 0) {
    ::unlink(tmp.c_str());
    fail(t, "write failed (disk full?)");
  }
  if (in_place) {
    try {
      copy_into(t, tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
    ::unlink(tmp.c_str());
    return;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int e = errno;
    ::unlink(tmp.c_str());
    fail(t, std::strerror(e));
  }
}

} // namespace

OutputTarget check_output(const fs::path& path, const std::string& flag, bool create_folders) {
  if (path.empty()) {
    throw InputError(fmt::format("{} '': the file name is empty", flag));
  }
  OutputTarget t;
  t.requested = path;
  t.resolved = path;
  t.create_folders = create_folders;
  return check_resolved(std::move(t), 0);
}

bool same_output(const OutputTarget& a, const OutputTarget& b) {
  struct stat sa {};
  struct stat sb {};
  if (::stat(a.resolved.c_str(), &sa) == 0 && ::stat(b.resolved.c_str(), &sb) == 0) {
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  }
  std::error_code ec;
  return fs::weakly_canonical(fs::absolute(a.resolved, ec), ec) ==
         fs::weakly_canonical(fs::absolute(b.resolved, ec), ec);
}

void write_output(const OutputTarget& target, const std::function<void(std::ostream&)>& write) {
  if (target.kind == OutputKind::stream) {
    write_stream(target, write);
  } else {
    write_file(target, write);
  }
}

void install_output_cleanup() {
  static std::atomic<bool> installed{false};
  if (installed.exchange(true)) {
    return;
  }
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) {
    struct sigaction old {};
    if (::sigaction(sig, nullptr, &old) == 0 && old.sa_handler == SIG_IGN) {
      continue; // nohup and friends: keep ignoring
    }
    struct sigaction sa {};
    sa.sa_handler = remove_temps_and_reraise;
    sigemptyset(&sa.sa_mask);
    ::sigaction(sig, &sa, nullptr);
  }
}

} // namespace zerosearch
