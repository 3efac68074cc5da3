#pragma once
// Per-layer profiles (profiledb/profiles/*.json): measured forward time of every pipeline layer
// for one (model, GPU type, framework flavour), per tensor-parallel degree.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace zerosearch {

/// Which training framework the profile was measured under. DeepSpeed serves ZeRO 0-3,
/// Megatron-LM serves dp and fsdp.
enum class Flavour { megatron, deepspeed };

[[nodiscard]] const char* to_string(Flavour f) noexcept;

struct GpuProfile {
  std::string model;
  std::string gpu;
  Flavour flavour = Flavour::deepspeed;
  /// True when the embedding and post_process times were measured per micro-batch already
  /// (the original's A100 profiles), so they are not multiplied by the micro-batch size.
  bool ends_per_micro_batch = false;
  /// Forward time in seconds of each pipeline layer [embedding, transformers..., post_process],
  /// keyed by tensor-parallel degree.
  std::map<int, std::vector<double>> layer_times_s;
  std::string origin;
};

class ProfileDb {
public:
  void add(GpuProfile profile);
  /// nullptr when no profile exists for that triple.
  [[nodiscard]] const GpuProfile* find(const std::string& model, const std::string& gpu,
                                       Flavour flavour) const noexcept;
  [[nodiscard]] const std::vector<GpuProfile>& all() const noexcept { return profiles_; }

private:
  std::vector<GpuProfile> profiles_;
};

/// Parses one profile file's text. Throws InputError naming `origin` on any defect (malformed
/// JSON with its line, unknown keys, NaN, negative or missing times, ragged tp arrays).
[[nodiscard]] GpuProfile parse_profile(const std::string& text, const std::string& origin);
/// Loads every *.json below `dir` (the profiles folder). Throws InputError.
[[nodiscard]] ProfileDb load_profile_db(const std::filesystem::path& dir);

} // namespace zerosearch
