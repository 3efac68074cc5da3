// Runs the contract: one zerosearch process per distinct argument list (cached), two at a time.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace zerosearch::validate {

struct Prediction {
  bool ok = false;
  double step_s = 0, gib = 0;
  /// Why not, when !ok: the estimator's own one-line error.
  std::string error;
};

class Runner {
public:
  explicit Runner(std::filesystem::path work_dir) : dir_(std::move(work_dir)) {}
  /// Runs the argument lists not run before, `threads` at a time.
  void run_all(const std::vector<std::vector<std::string>>& argvs, unsigned threads = 2);
  /// The result of an argument list run before.
  [[nodiscard]] const Prediction& at(const std::vector<std::string>& argv) const;
  [[nodiscard]] std::size_t processes() const { return cache_.size(); }

private:
  Prediction run_one(const std::vector<std::string>& argv, std::size_t slot) const;
  std::filesystem::path dir_;
  std::map<std::vector<std::string>, Prediction> cache_;
};

} // namespace zerosearch::validate
