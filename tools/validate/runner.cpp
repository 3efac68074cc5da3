#include "validate/runner.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <exception>
#include <fstream>
#include <stdexcept>
#include <thread>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "validate/corpus.hpp"

extern char** environ;

namespace zerosearch::validate {

Prediction Runner::run_one(const std::vector<std::string>& argv, std::size_t slot) const {
  const std::filesystem::path errors = dir_ / fmt::format("run{}.stderr", slot);
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("pipe failed");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fds[1], 1);
  posix_spawn_file_actions_addopen(&actions, 2, errors.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                   0644);
  posix_spawn_file_actions_addclose(&actions, fds[0]);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    throw BadInput(fmt::format("cannot run {}", argv[0]));
  }
  std::string out;
  std::array<char, 4096> buf{};
  ssize_t n = 0;
  while ((n = read(fds[0], buf.data(), buf.size())) > 0) {
    out.append(buf.data(), static_cast<std::size_t>(n));
  }
  close(fds[0]);
  int st = 0;
  waitpid(pid, &st, 0);
  const int status = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
  Prediction p;
  if (status != 0) {
    std::ifstream in(errors);
    std::string line;
    std::getline(in, line);
    const std::string prefix = "zerosearch: error: ";
    if (line.rfind(prefix, 0) == 0) line = line.substr(prefix.size());
    p.error = line.empty() ? fmt::format("zerosearch exited with {}", status)
                           : "the estimator rejects it: " + line;
    return p;
  }
  try {
    const auto j = nlohmann::json::parse(out);
    p.step_s = j.at(0).at("estimated time (s/step)").get<double>();
    p.gib = j.at(0).at("gpumem").get<double>();
    p.ok = true;
  } catch (const nlohmann::json::exception& e) {
    p.error = std::string("unreadable zerosearch output: ") + e.what();
  }
  return p;
}

void Runner::run_all(const std::vector<std::vector<std::string>>& argvs, unsigned threads) {
  std::vector<const std::vector<std::string>*> todo;
  for (const auto& a : argvs) {
    if (cache_.emplace(a, Prediction{}).second) todo.push_back(&cache_.find(a)->first);
  }
  std::vector<Prediction> results(todo.size());
  std::atomic<std::size_t> next{0};
  std::vector<std::thread> workers;
  std::exception_ptr failure;
  std::atomic<bool> failed{false};
  for (unsigned t = 0; t < std::max(1U, threads); ++t) {
    workers.emplace_back([&, t] {
      try {
        for (std::size_t i = next++; i < todo.size() && !failed; i = next++) {
          results[i] = run_one(*todo[i], t);
        }
      } catch (...) {
        if (!failed.exchange(true)) failure = std::current_exception();
      }
    });
  }
  for (auto& w : workers) w.join();
  if (failure) std::rethrow_exception(failure);
  for (std::size_t i = 0; i < todo.size(); ++i) cache_[*todo[i]] = results[i];
}

const Prediction& Runner::at(const std::vector<std::string>& argv) const {
  return cache_.at(argv);
}

} // namespace zerosearch::validate
